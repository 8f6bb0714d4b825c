package ingest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/segmentio/kafka-go"
)

// refreshLimit reads the topic's message limit through the admin API
// (DescribeConfigs): the topic's max.message.bytes, else (a topic not created
// yet) the broker's message.max.bytes, asked of one of brokers. It keeps the
// last limit read (DefaultMessageMaxBytes at first) when neither answers, and
// logs a change. Called by each ping and before a copy refused for its size
// is sent again.
func (q *KafkaQueue) refreshLimit(ctx context.Context, brokers []kafka.Broker) {
	limit, src, err := q.readLimit(ctx, brokers)
	if err != nil {
		if ctx.Err() == nil {
			q.log.Debug("kafka: message limit not read; keeping the last one", "bytes", q.limit.Load(), "err", err)
		}
		return
	}
	if old := q.limit.Swap(limit); old != limit {
		q.log.Info("kafka: message limit", "topic", q.cfg.Topic, "bytes", limit, "from", src, "was", old)
	}
}

func (q *KafkaQueue) readLimit(ctx context.Context, brokers []kafka.Broker) (int64, string, error) {
	v, terr := q.describeConfig(ctx, nil, kafka.ResourceTypeTopic, q.cfg.Topic, "max.message.bytes")
	if terr == nil {
		return v, "topic max.message.bytes", nil
	}
	errs := []error{fmt.Errorf("topic %s: %w", q.cfg.Topic, terr)}
	for _, b := range brokers {
		addr := &net.TCPAddr{IP: net.ParseIP(b.Host), Port: b.Port}
		if addr.IP == nil {
			addrs, err := net.DefaultResolver.LookupIPAddr(ctx, b.Host)
			if err != nil || len(addrs) == 0 {
				errs = append(errs, fmt.Errorf("broker %d: resolve %s: %w", b.ID, b.Host, err))
				continue
			}
			addr.IP = addrs[0].IP
		}
		v, err := q.describeConfig(ctx, addr, kafka.ResourceTypeBroker, strconv.Itoa(b.ID), "message.max.bytes")
		if err == nil {
			return v, "broker message.max.bytes", nil
		}
		errs = append(errs, fmt.Errorf("broker %d: %w", b.ID, err))
	}
	return 0, "", errors.Join(errs...)
}

// describeConfig reads one integer config of one resource.
func (q *KafkaQueue) describeConfig(ctx context.Context, addr net.Addr, typ kafka.ResourceType, name, key string) (int64, error) {
	resp, err := q.client.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Addr: addr,
		Resources: []kafka.DescribeConfigRequestResource{{ResourceType: typ, ResourceName: name, ConfigNames: []string{key}}}})
	if err != nil {
		return 0, err
	}
	for _, r := range resp.Resources {
		if r.Error != nil {
			return 0, r.Error
		}
		for _, e := range r.ConfigEntries {
			if e.ConfigName != key {
				continue
			}
			v, err := strconv.ParseInt(e.ConfigValue, 10, 64)
			if err != nil || v < 1024 {
				return 0, fmt.Errorf("%s = %q: want a number of bytes of at least 1024", key, e.ConfigValue)
			}
			return v, nil
		}
	}
	return 0, fmt.Errorf("%s not in the answer", key)
}
