// Command devkafka serves a single-broker, in-memory Kafka (franz-go's kfake) on a
// loopback TCP port (127.0.0.1), for local runs and for `loadtest` (cmd/loadtest; the
// tap-only row). It keeps nothing on disk and is not a production broker: use a
// real Kafka (docker-compose.yml) for that. It lives in its own binary so the
// production binary carries no Kafka stand-in.
//
// It keeps a real broker's default message limit (message.max.bytes 1,048,588,
// --message-max-bytes), so the tap's claim-check is exercised as against a
// real Kafka. It prints "listening on HOST:PORT" on stdout once the broker
// accepts connections and runs until SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 0, "loopback port to listen on (0 picks a free one)")
	topics := flag.String("topics", "conductor-shadow.exchanges", "comma-separated topics created at start")
	partitions := flag.Int("partitions", 6, "partitions of each created topic")
	maxBytes := flag.Int("message-max-bytes", 1048588, "the broker's message.max.bytes (Kafka's default: 1 MiB + 12 bytes)")
	flag.Parse()
	if err := run(*port, *topics, *partitions, *maxBytes); err != nil {
		fmt.Fprintln(os.Stderr, "devkafka:", err)
		os.Exit(1)
	}
}

func run(port int, topics string, partitions, maxBytes int) error {
	if port < 0 || port > 65535 {
		return fmt.Errorf("--port %d: want 0..65535", port)
	}
	if partitions < 1 {
		return fmt.Errorf("--partitions %d: want at least 1", partitions)
	}
	if maxBytes < 1024 {
		return fmt.Errorf("--message-max-bytes %d: want at least 1024", maxBytes)
	}
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(port),
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": strconv.Itoa(maxBytes)})}
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
