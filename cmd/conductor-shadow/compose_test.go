package main

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/conductor-shadow/conductor-shadow/ingest"
)

// composeFile is the part of docker-compose.yml the checks read (anchors and
// merge keys resolved by the YAML parser).
type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Build       any               `yaml:"build"`
		Command     []string          `yaml:"command"`
		Entrypoint  []string          `yaml:"entrypoint"`
		Ports       []string          `yaml:"ports"`
		Environment map[string]string `yaml:"environment"`
		DependsOn   map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
		Profiles []string `yaml:"profiles"`
	} `yaml:"services"`
}

// docker-compose.yml cannot be run here (no docker); what it promises is
// checked on the file: valid YAML whose dependencies name services; a Kafka
// with a listener for the compose network (kafka:9092, what the tap and the
// workers are given) and one for the host (localhost:29092, published); the
// exchanges topic created before the tap and the workers start with at least
// as many partitions as shadow workers the file can scale to (one host port
// each), so none idles.
func TestComposeKafkaServesEveryShadowWorker(t *testing.T) {
	raw, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("docker-compose.yml is not valid YAML: %v", err)
	}
	for name, s := range c.Services {
		if s.Image == "" && s.Build == nil {
			t.Errorf("service %s has neither image nor build", name)
		}
		for dep, d := range s.DependsOn {
			if _, ok := c.Services[dep]; !ok {
				t.Errorf("service %s depends on %s, which is no service", name, dep)
			}
			if !slices.Contains([]string{"service_started", "service_healthy", "service_completed_successfully"}, d.Condition) {
				t.Errorf("service %s: depends_on %s condition %q", name, dep, d.Condition)
			}
		}
	}

	kafka, ok := c.Services["kafka"]
	if !ok {
		t.Fatal("no kafka service")
	}
	env := kafka.Environment
	listeners := map[string]string{} // name -> port
	for _, l := range strings.Split(env["KAFKA_LISTENERS"], ",") {
		name, addr, _ := strings.Cut(l, "://")
		listeners[name] = strings.TrimPrefix(addr, ":")
	}
	protocols := env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"]
	for name := range listeners {
		if !strings.Contains(protocols, name+":") {
			t.Errorf("listener %s has no security protocol in %q", name, protocols)
		}
	}
	advertised := strings.Split(env["KAFKA_ADVERTISED_LISTENERS"], ",")
	for _, want := range []string{"PLAINTEXT://kafka:9092", "EXTERNAL://localhost:29092"} {
		if !slices.Contains(advertised, want) {
			t.Errorf("KAFKA_ADVERTISED_LISTENERS %v lacks %s", advertised, want)
		}
	}
	if listeners["EXTERNAL"] != "29092" || !slices.Contains(kafka.Ports, "29092:29092") {
		t.Errorf("the host listener: KAFKA_LISTENERS %q, ports %v; want EXTERNAL on 29092, published as 29092:29092", env["KAFKA_LISTENERS"], kafka.Ports)
	}

	creator, ok := c.Services["kafka-init"]
	if !ok {
		t.Fatal("no kafka-init service creating the topic")
	}
	arg := func(flag string) string {
		i := slices.Index(creator.Entrypoint, flag)
		if i < 0 || i+1 >= len(creator.Entrypoint) {
			t.Fatalf("kafka-init %v has no %s", creator.Entrypoint, flag)
		}
		return creator.Entrypoint[i+1]
	}
	if topic := arg("--topic"); topic != ingest.NewDefaultKafkaConfig().Topic {
		t.Errorf("kafka-init creates topic %q; the platform reads %q (ingest.kafka.topic)", topic, ingest.NewDefaultKafkaConfig().Topic)
	}
	partitions, err := strconv.Atoi(arg("--partitions"))
	if err != nil {
		t.Fatal(err)
	}
	if env["KAFKA_NUM_PARTITIONS"] != strconv.Itoa(partitions) {
		t.Errorf("KAFKA_NUM_PARTITIONS %q; want the %d kafka-init creates (a topic created on first use gets the same)", env["KAFKA_NUM_PARTITIONS"], partitions)
	}

	// Shadow workers: each replica needs a host port of its range.
	workers := 0
	for name, s := range c.Services {
		if !slices.Contains(s.Command, "shadow") {
			continue
		}
		for _, p := range s.Ports {
			host, _, _ := strings.Cut(p, ":")
			lo, hi, isRange := strings.Cut(host, "-")
			n := 1
			if isRange {
				a, _ := strconv.Atoi(lo)
				b, _ := strconv.Atoi(hi)
				n = b - a + 1
			}
			workers += n
		}
		if !slices.Contains(s.Command, "kafka:9092") {
			t.Errorf("shadow worker %s is not given kafka:9092: %v", name, s.Command)
		}
		if s.DependsOn["kafka-init"].Condition != "service_completed_successfully" {
			t.Errorf("shadow worker %s starts before the topic is created", name)
		}
	}
	if workers == 0 || partitions < workers {
		t.Errorf("%d partitions for up to %d shadow workers: want at least one partition per worker", partitions, workers)
	}
	if tap := c.Services["tap"]; tap.DependsOn["kafka-init"].Condition != "service_completed_successfully" {
		t.Errorf("the tap starts before the topic is created (would create it with the broker's defaults)")
	}
}
