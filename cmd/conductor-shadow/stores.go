package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
)

// resolveStore is platform.ResolveStore for cmd: its declared access, the
// flags given on its command line (--data, --addr, --tap, --local), and the
// store line printed on stderr. Errors start with the command's name.
func resolveStore(cmd *cobra.Command, cfg platform.Config) (platform.StoreTarget, error) {
	access := platform.StoreOf(cmd)
	if access == "" {
		return platform.StoreTarget{}, fmt.Errorf("%s: declares no store access", commandName(cmd))
	}
	f := cmd.Flags()
	ex := platform.Explicit{Data: f.Changed("data"), Addr: f.Changed("addr")}
	if tap := f.Lookup("tap"); tap != nil && tap.Changed {
		ex.Addr = true
	}
	if local := f.Lookup("local"); local != nil {
		ex.Local = local.Value.String() == "true"
	}
	t, err := platform.ResolveStore(cmd.Context(), cfg, access, ex)
	if err != nil {
		return t, fmt.Errorf("%s: %w", commandName(cmd), err)
	}
	if t.Line != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), t.Line)
	}
	return t, nil
}

// commandName is cmd's path without the binary's name: "suite run".
func commandName(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}
