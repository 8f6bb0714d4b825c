package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// The SQL console (Store.Query) runs text a caller typed. The engine decides
// what that text is, in four steps, before anything of it runs:
//
//  1. our lexer (CheckReadOnly) refuses what is plainly not one read;
//  2. the engine's parser renders the text as one canonical statement
//     (formatQuery, given the text as a quoted string literal, so nothing of it
//     runs); more than one statement is a parse error there;
//  3. the engine's parser dumps the canonical statement's syntax tree (EXPLAIN
//     AST, which runs nothing) and consoleAST allows only reads of this
//     database, of a list of system tables and of harmless table functions,
//     with no SETTINGS, no output file or format, and no function that touches
//     files, URLs, other servers, the environment or the engine's settings;
//  4. the canonical statement runs with engine-enforced limits and readonly = 1
//     appended (the caller can set no setting), and on the embedded engine its
//     exact text must classify as one read-only statement first
//     (chdb_classify_query_n).

// ErrQueryBusy: every console slot is taken; try again when a query finishes.
var ErrQueryBusy = errors.New("store: query: the console is busy with other queries; try again in a moment")

// consoleTableFunctions are the table functions a console query may read from:
// generated rows only, nothing outside the engine.
var consoleTableFunctions = map[string]bool{
	"numbers": true, "numbers_mt": true, "zeros": true, "zeros_mt": true,
	"generate_series": true, "generateseries": true, "values": true, "view": true,
}

// consoleSystemTables are the system tables a console query may read: the
// schema, parts, merges and the engine's counters. Tables that show users,
// grants, settings, paths, other queries' text, logs or remote state are not.
var consoleSystemTables = map[string]bool{
	"tables": true, "columns": true, "databases": true, "parts": true, "parts_columns": true,
	"data_skipping_indices": true, "functions": true, "table_functions": true,
	"aggregate_function_combinators": true, "data_type_families": true, "formats": true,
	"time_zones": true, "merges": true, "mutations": true, "metrics": true, "events": true,
	"asynchronous_metrics": true, "numbers": true, "numbers_mt": true, "one": true,
	"zeros": true, "zeros_mt": true, "keywords": true,
}

// consoleDeniedFunctions are scalar functions (lower case) a console query may
// not call: they read files, reach other servers or tables by name, expose the
// host, its environment or the engine's settings, or only stall the engine.
// Names starting with "dict" or "__" are denied as families.
var consoleDeniedFunctions = map[string]bool{
	"file": true, "filesystemavailable": true, "filesystemcapacity": true, "filesystemfree": true,
	"filesystemunreserved": true, "getsetting": true, "getsettingordefault": true,
	"getserversetting": true, "getmergetreesetting": true, "getmacro": true,
	"getclienthttpheader": true, "getoskernelversion": true, "getserverport": true,
	"hostname": true, "fqdn": true, "displayname": true, "serveruuid": true,
	"joinget": true, "joingetornull": true, "hascolumnintable": true,
	"catboostevaluate": true, "modelevaluate": true, "naivebayesclassifier": true,
	"addresstoline": true, "addresstolinewithinlines": true, "addresstosymbol": true,
	"demangle": true, "sleep": true, "sleepeachrow": true, "lemmatize": true,
	"synonyms": true, "stem": true, "logtrace": true, "zookeepersessionuptime": true,
	"fuzzquery": true, "currentqueryid": true, "initialqueryid": true,
}

// inFunctions take a table (or a subquery) as their second argument.
var inFunctions = map[string]bool{
	"in": true, "notin": true, "globalin": true, "globalnotin": true,
	"nullin": true, "notnullin": true, "globalnullin": true, "globalnotnullin": true,
}

// consoleExplainKinds are the EXPLAIN forms the console runs.
var consoleExplainKinds = map[string]bool{
	"EXPLAIN": true, "EXPLAIN AST": true, "EXPLAIN SYNTAX": true, "EXPLAIN QUERY TREE": true,
	"EXPLAIN PLAN": true, "EXPLAIN PIPELINE": true, "EXPLAIN ESTIMATE": true,
}

// consoleGuard holds what the console check learns from the engine once: the
// names of table functions that are not also scalar functions (lower case).
type consoleGuard struct {
	mu        sync.Mutex
	tableOnly map[string]bool
	slots     chan struct{}
	database  string // unquoted: qualified table names must name it
	// userReadonly is the readonly setting the console's ClickHouse user has
	// by its profile: 0 (the store's own connection) appends readonly = 1 and
	// the limits to every statement; 2 appends the limits only (the engine
	// refuses any change of readonly); 1 appends nothing (the engine refuses
	// every setting; the profile holds the limits).
	userReadonly int
}

// userReadonly reads the readonly setting of the console connection's user
// and refuses a user that may write.
func userReadonly(ctx context.Context, t transport) (int, error) {
	type row struct {
		R string `json:"r"`
	}
	rows, err := queryRows[row](ctx, t, "SELECT toString(getSetting('readonly')) AS r")
	if err != nil {
		return 0, fmt.Errorf("store: console_dsn: read the user's readonly setting: %w", err)
	}
	if len(rows) == 1 {
		switch rows[0].R {
		case "1":
			return 1, nil
		case "2":
			return 2, nil
		}
	}
	return 0, fmt.Errorf("store: console_dsn: the user is not read-only (readonly = %v); give it a settings profile with readonly = 2 (see README, Security)", rows)
}

func newConsoleGuard(database string, concurrency int) *consoleGuard {
	if concurrency < 1 {
		concurrency = 1
	}
	return &consoleGuard{database: database, slots: make(chan struct{}, concurrency)}
}

// acquire takes a console slot without waiting; release gives it back.
func (g *consoleGuard) acquire() bool {
	select {
	case g.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (g *consoleGuard) release() { <-g.slots }

// tableOnlyFunctions returns (and remembers) the engine's table functions that
// are not scalar functions: called outside FROM they are refused too.
func (g *consoleGuard) tableOnlyFunctions(ctx context.Context, t transport) (map[string]bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tableOnly != nil {
		return g.tableOnly, nil
	}
	type row struct {
		Name string `json:"name"`
	}
	rows, err := queryRows[row](ctx, t, "SELECT name FROM system.table_functions WHERE name NOT IN (SELECT name FROM system.functions)")
	if err != nil {
		return nil, fmt.Errorf("store: query: list table functions: %w", err)
	}
	m := make(map[string]bool, len(rows))
	for _, r := range rows {
		m[strings.ToLower(r.Name)] = true
	}
	g.tableOnly = m
	return m, nil
}

// canonical asks the engine to parse sql as exactly one statement and returns
// its canonical rendering. The text reaches the engine only inside a string
// literal. A second statement is ErrReadOnly; other parse errors are plain.
func canonical(ctx context.Context, t transport, sql string) (string, error) {
	type row struct {
		Q string `json:"q"`
	}
	rows, err := queryRows[row](ctx, t, "SELECT formatQuery("+quoteString(sql)+") AS q")
	if err != nil {
		if strings.Contains(err.Error(), "Multi-statements are not allowed") {
			return "", fmt.Errorf("%w: only one statement is allowed", ErrReadOnly)
		}
		return "", fmt.Errorf("store: query: %w", err)
	}
	if len(rows) != 1 || strings.TrimSpace(rows[0].Q) == "" {
		return "", fmt.Errorf("store: query: empty statement")
	}
	return rows[0].Q, nil
}

// astNode is one line of EXPLAIN AST output: "<indent><Kind> [name] [(alias a)] [(children n)]".
type astNode struct {
	depth int
	kind  string
	name  string // Function, Identifier and TableIdentifier names; the rest of the line otherwise
}

// parseAST parses EXPLAIN AST output into nodes in pre-order. A line deeper
// than its predecessor's child is malformed.
func parseAST(out string) ([]astNode, error) {
	var nodes []astNode
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if trimmed == "" {
			return nil, errors.New("empty line in syntax tree")
		}
		n := astNode{depth: len(line) - len(trimmed)}
		if len(nodes) == 0 && n.depth != 0 || len(nodes) > 0 && n.depth > nodes[len(nodes)-1].depth+1 || len(nodes) > 0 && n.depth == 0 {
			return nil, fmt.Errorf("malformed syntax tree at %q", line)
		}
		n.kind, n.name, _ = strings.Cut(trimmed, " ")
		if i := strings.Index(n.name, " ("); i >= 0 && n.kind != "Literal" {
			n.name = n.name[:i]
		} else if strings.HasPrefix(n.name, "(") {
			n.name = ""
		}
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		return nil, errors.New("empty syntax tree")
	}
	return nodes, nil
}

// checkAST applies the console's rules to the syntax tree of one statement.
// tableOnly names table functions that are not scalar functions (lower case).
// It returns an error wrapping ErrReadOnly naming the first thing refused.
func (g *consoleGuard) checkAST(canon string, nodes []astNode, tableOnly map[string]bool) error {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrReadOnly}, args...)...)
	}
	root := nodes[0]
	var rootChildren []astNode
	for _, n := range nodes[1:] {
		if n.depth == 1 {
			rootChildren = append(rootChildren, n)
		}
	}
	switch root.kind {
	case "SelectWithUnionQuery", "DescribeQuery":
		if len(rootChildren) != 1 {
			return refuse("INTO OUTFILE, FORMAT and SETTINGS clauses are not allowed")
		}
	case "Explain":
		if !consoleExplainKinds[root.name] {
			return refuse("%s is not allowed", root.name)
		}
		if len(rootChildren) != 1 || rootChildren[0].kind != "SelectWithUnionQuery" {
			return refuse("EXPLAIN takes one SELECT, without options, INTO OUTFILE, FORMAT or SETTINGS")
		}
	case "ShowTables": // SHOW TABLES [FROM db] [LIKE …], SHOW DATABASES
		if !strings.HasPrefix(canon, "SHOW TABLES") && !strings.HasPrefix(canon, "SHOW DATABASES") {
			return refuse("of the SHOW statements only SHOW TABLES and SHOW DATABASES are allowed")
		}
		if len(rootChildren) > 1 || len(rootChildren) == 1 && (rootChildren[0].kind != "Identifier" || !g.readableDatabase(rootChildren[0].name)) {
			return refuse("SHOW TABLES takes this database, system or information_schema")
		}
	default:
		return refuse("%s is not a read statement", root.kind)
	}

	// parents[d] is the latest node at depth d; index[d] its position among its siblings.
	parents := make([]astNode, 0, 32)
	index := make([]int, 0, 32)
	for _, n := range nodes {
		parents = parents[:n.depth]
		if len(index) > n.depth {
			index = index[:n.depth+1]
			index[n.depth]++
		} else {
			index = append(index, 0)
		}
		var parent, grand astNode
		if n.depth >= 1 {
			parent = parents[n.depth-1]
		}
		if n.depth >= 2 {
			grand = parents[n.depth-2]
		}
		parents = append(parents, n)
		switch n.kind {
		case "Set":
			return refuse("SETTINGS are not allowed; the store sets them")
		case "QueryParameter":
			return refuse("query parameters are not allowed")
		case "ColumnsApplyTransformer":
			return refuse("APPLY is not allowed; call functions by name")
		case "Function":
			name := strings.ToLower(n.name)
			if parent.kind == "TableExpression" {
				if !consoleTableFunctions[name] {
					return refuse("table function %s is not allowed: the console reads this database only", n.name)
				}
				continue
			}
			if consoleDeniedFunctions[name] || strings.HasPrefix(name, "dict") || strings.HasPrefix(name, "__") || tableOnly[name] {
				return refuse("function %s is not allowed: it reaches outside the database", n.name)
			}
		case "TableIdentifier":
			if err := g.checkTable(n.name); err != nil {
				return err
			}
		case "Identifier":
			// x IN db.table reads a table named by an identifier.
			if parent.kind == "ExpressionList" && grand.kind == "Function" && inFunctions[strings.ToLower(grand.name)] && index[n.depth] == 1 {
				if err := g.checkTable(n.name); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// readableDatabase reports whether the console may read database db.
func (g *consoleGuard) readableDatabase(db string) bool {
	return db == g.database || db == "system" || strings.EqualFold(db, "information_schema")
}

// checkTable allows unqualified names (this database, or a WITH name), this
// database's tables, information_schema and the listed system tables.
func (g *consoleGuard) checkTable(name string) error {
	db, table, ok := strings.Cut(name, ".")
	switch {
	case !ok, db == g.database, strings.EqualFold(db, "information_schema"):
		return nil
	case db == "system" && consoleSystemTables[table]:
		return nil
	}
	return fmt.Errorf("%w: table %s is not readable from the console: it reads this database, information_schema and system's schema tables", ErrReadOnly, name)
}

// checkCanonical is the lexer's second look, at the engine's canonical text:
// one read statement, no clause the store sets, and quoted identifiers only
// where a plain name is a keyword (so no name can carry spaces or newlines
// into the syntax tree dump).
func checkCanonical(sql string) error {
	if err := CheckReadOnly(sql); err != nil {
		return err
	}
	toks, err := lexSQL(sql)
	if err != nil {
		return fmt.Errorf("store: query: %w", err)
	}
	for i, t := range toks {
		if t.text == "{" && i+2 < len(toks) && toks[i+1].kind == tokWord && toks[i+2].text == ":" {
			return fmt.Errorf("%w: query parameters ({name:Type}) are not allowed", ErrReadOnly)
		}
		if t.kind == tokQuotedIdent && !plainName(t.text[1:len(t.text)-1]) {
			return fmt.Errorf("%w: quoted name %s: names are letters, digits and '_'", ErrReadOnly, t.text)
		}
		if t.kind == tokWord && strings.ContainsAny(t.text, "$") {
			return fmt.Errorf("%w: %q: '$' is not allowed outside quotes", ErrReadOnly, t.text)
		}
	}
	return nil
}

func plainName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// prepare runs steps 1–3 of the console check and returns the statement to run
// (step 4's text, settings appended).
func (g *consoleGuard) prepare(ctx context.Context, t transport, sql string, lim queryLimits) (string, error) {
	if err := CheckReadOnly(sql); err != nil {
		return "", err
	}
	canon, err := canonical(ctx, t, sql)
	if err != nil {
		return "", err
	}
	if err := checkCanonical(canon); err != nil {
		return "", err
	}
	tableOnly, err := g.tableOnlyFunctions(ctx, t)
	if err != nil {
		return "", err
	}
	res, err := t.queryText(ctx, "EXPLAIN AST "+canon)
	if err != nil {
		return "", fmt.Errorf("store: query: %w", err)
	}
	var dump strings.Builder
	for _, r := range res.Rows {
		if len(r) != 1 {
			return "", fmt.Errorf("store: query: unexpected syntax tree shape")
		}
		dump.WriteString(r[0])
		dump.WriteByte('\n')
	}
	nodes, err := parseAST(dump.String())
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrReadOnly, err)
	}
	if err := g.checkAST(canon, nodes, tableOnly); err != nil {
		return "", err
	}
	switch g.userReadonly {
	case 1:
		return canon, nil
	case 2:
		return canon + "\nSETTINGS " + strings.TrimSuffix(lim.settings(), ", "), nil
	}
	return canon + "\nSETTINGS " + lim.settings() + "readonly = 1", nil
}
