// Command devkafka serves a single-broker, in-memory Kafka (franz-go's kfake) on a
// loopback TCP port (127.0.0.1), for local runs and for `loadtest` (cmd/loadtest; the
// tap-only row). It keeps nothing on disk and is not a production broker: use a
// real Kafka (docker-compose.yml) for that. It lives in its own binary so the
// production binary carries no Kafka stand-in.
//
// It prints "listening on HOST:PORT" on stdout once the broker accepts
// connections and runs until SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 0, "loopback port to listen on (0 picks a free one)")
	topics := flag.String("topics", "conductor-shadow.exchanges", "comma-separated topics created at start")
	partitions := flag.Int("partitions", 6, "partitions of each created topic")
	flag.Parse()
	if err := run(*port, *topics, *partitions); err != nil {
		fmt.Fprintln(os.Stderr, "devkafka:", err)
		os.Exit(1)
	}
}

func run(port int, topics string, partitions int) error {
	if port < 0 || port > 65535 {
		return fmt.Errorf("--port %d: want 0..65535", port)
	}
	if partitions < 1 {
		return fmt.Errorf("--partitions %d: want at least 1", partitions)
	}
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(port)}
	var names []string
	for _, t := range strings.Split(topics, ",") {
		if t = strings.TrimSpace(t); t != "" {
			names = append(names, t)
		}
	}
	if len(names) > 0 {
		opts = append(opts, kfake.SeedTopics(int32(partitions), names...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return fmt.Errorf("start broker: %w", err)
	}
	defer c.Close()
	fmt.Printf("listening on %s\n", c.ListenAddrs()[0])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}
