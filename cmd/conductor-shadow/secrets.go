package main

import (
	"os"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
)

// secretEnvNames lists the environment variables that carry secrets for cfg:
// the API token, the PII key, the web UI's credentials, every worker's API key,
// the ClickHouse DSN overrides (they may hold a password), the notification
// webhook's URL and the SMTP password.
func secretEnvNames(cfg platform.Config) []string {
	names := []string{cfg.Server.APITokenEnv, cfg.Ingest.PII.SecretEnv, cfg.Web.AuthTokenEnv,
		cfg.Web.BasicAuthPasswordEnv, "CONDUCTOR_SHADOW_CLICKHOUSE_DSN", "CONDUCTOR_SHADOW_CONSOLE_DSN",
		cfg.Notify.Webhook.URLEnv, cfg.Notify.Email.PasswordEnv}
	for _, w := range cfg.Shadow.Workers {
		names = append(names, w.APIKeyEnv)
	}
	return names
}

// scrubSecrets removes the secret variables from the process environment once
// serve has read them, so nothing started or asked later (a child process, a
// handler printing the environment) finds them there. /proc/self/environ still
// shows the environment the process started with; the SQL console cannot read
// files (store/console.go), which is what keeps that copy out of reach.
func scrubSecrets(cfg platform.Config) {
	for _, name := range secretEnvNames(cfg) {
		if name != "" {
			os.Unsetenv(name)
		}
	}
}
