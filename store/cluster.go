package store

import (
	"fmt"
	"regexp"
	"strings"
)

// localSuffix names the shard-local table under each Distributed table on a
// cluster: requests_local under requests, and so on.
const localSuffix = "_local"

// shardingKeys spread each table's rows over the shards so that every record
// with one natural key lands on one shard (ReplacingMergeTree replaces and
// FINAL deduplicates within a shard only): a trace's request, runs and scores
// go by request_id, steps by run_id, suite tables by suite_run_id.
var shardingKeys = map[string]string{
	"requests":           "cityHash64(request_id)",
	"runs":               "cityHash64(request_id)",
	"steps":              "cityHash64(run_id)",
	"scores":             "cityHash64(request_id)",
	"suite_runs":         "cityHash64(suite_run_id)",
	"cases":              "cityHash64(suite_run_id)",
	"schema_migrations":  "version",
	"audit_log":          "cityHash64(audit_id)",
	"forgotten_subjects": "cityHash64(subject_hash)",
	"shadow_work":        "cityHash64(request_id)",
	"forget_keys":        "cityHash64(erasure_id)",
	"judgments":          "cityHash64(request_id)",
	"verdict_notices":    "cityHash64(sink, kind, candidate, candidate_version, set_name)",
	"flow_exports":       "cityHash64(kind, recipient, host)",
	"live_sequences":     "cityHash64(pipeline, pipeline_version)",
	"suite_looks":        "cityHash64(set_name, candidate)",
	"tap_offered":        "cityHash64(tap_id)",
}

var (
	createDatabaseRE = regexp.MustCompile(`^CREATE DATABASE IF NOT EXISTS (\S+)$`)
	createTableRE    = regexp.MustCompile(`(?s)^CREATE TABLE IF NOT EXISTS (\S+)\.(\w+)(\s*\(.*\)\s*)ENGINE = (Replacing)?MergeTree\(([^)]*)\)(.*)$`)
	alterTableRE     = regexp.MustCompile(`(?s)^ALTER TABLE (\S+)\.(\w+) (.*)$`)
	columnChangeRE   = regexp.MustCompile(`^(ADD|DROP|MODIFY|RENAME|COMMENT|CLEAR) COLUMN `)
)

// ddl returns the statements that apply stmts (${DB} already replaced) on
// this store: stmts themselves on one node; on a cluster (Config.Cluster) each
// CREATE TABLE becomes a Replicated*MergeTree table <name>_local on every node
// (ZooKeeper path /clickhouse/tables/{shard}/<database>/<name>_local, replica
// {replica}: the servers' macros) plus a Distributed table <name> over it, and
// each ALTER goes to the local tables (column changes to the Distributed
// table too), all ON CLUSTER. Other statements are an error on a cluster.
func (s *sqlStore) ddl(stmts []string) ([]string, error) {
	if s.cluster == "" {
		return stmts, nil
	}
	return clusterDDL(stmts, s.dbName, s.cluster)
}

func clusterDDL(stmts []string, dbName, cluster string) ([]string, error) {
	on := " ON CLUSTER " + quoteIdent(cluster)
	var out []string
	for _, st := range stmts {
		st = strings.TrimSpace(st)
		if m := createDatabaseRE.FindStringSubmatch(st); m != nil {
			out = append(out, st+on)
			continue
		}
		if m := createTableRE.FindStringSubmatch(st); m != nil {
			db, name, body, replacing, args, rest := m[1], m[2], m[3], m[4], m[5], m[6]
			local := name + localSuffix
			engineArgs := fmt.Sprintf("'/clickhouse/tables/{shard}/%s/%s', '{replica}'", dbName, local)
			if args != "" {
				engineArgs += ", " + args
			}
			out = append(out, fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s%s%sENGINE = Replicated%sMergeTree(%s)%s",
				db, local, on, body, replacing, engineArgs, rest))
			key, ok := shardingKeys[name]
			if !ok {
				key = "rand()"
			}
			out = append(out, fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s%s AS %s.%s\nENGINE = Distributed(%s, %s, %s, %s)",
				db, name, on, db, local, quoteString(cluster), quoteString(dbName), quoteString(local), key))
			continue
		}
		if m := alterTableRE.FindStringSubmatch(st); m != nil {
			db, name, rest := m[1], m[2], m[3]
			out = append(out, fmt.Sprintf("ALTER TABLE %s.%s%s %s", db, name+localSuffix, on, rest))
			if columnChangeRE.MatchString(rest) {
				out = append(out, fmt.Sprintf("ALTER TABLE %s.%s%s %s", db, name, on, rest))
			}
			continue
		}
		return nil, fmt.Errorf("store: cluster %q: no replicated form for statement %.60q", cluster, st)
	}
	return out, nil
}
