package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// The SQL console (Store.Query) runs text a caller typed. On the embedded
// engine none of it reaches the store's engine: the text, the checks and the
// statement go to a console worker, a child process with an engine of its own
// over a snapshot of the store's tables, killed at the console's time limit
// (console_worker.go). The worker's engine decides what that text is, in four
// steps, before anything of it runs:
//
//  1. our lexer (CheckReadOnly) refuses what is plainly not one read, and a
//     text longer than consoleMaxQueryBytes;
//  2. the engine's parser renders the text as one canonical statement
//     (formatQuery, given the text as a quoted string literal, so nothing of it
//     runs); more than one statement is a parse error there;
//  3. the engine's parser dumps the canonical statement's syntax tree (EXPLAIN
//     AST, which runs nothing) and checkAST allows only reads of this
//     database, of a list of system tables (without their disk-path columns)
//     and of harmless table functions, with no SETTINGS, no output file or
//     format, a tree of at most consoleMaxASTElements nodes and
//     consoleMaxASTDepth levels, and only the functions of a reviewed
//     allow-list (console_functions.go), so no function touches files, URLs,
//     other servers, the host, the process, the environment or the engine's
//     settings, and none whose work per row an argument can blow up;
//  4. the canonical statement runs with engine-enforced limits (time, rows,
//     bytes, memory, analysis size, joins, sets, group-by keys) and
//     readonly = 1 appended (the caller can set no setting), and on the
//     embedded engine its exact text must classify as one read-only
//     statement first (chdb_classify_query_n).

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
// grants, settings, other queries' text, logs or remote state are not; the
// tables of consolePathColumns are readable without their disk paths.
var consoleSystemTables = map[string]bool{
	"tables": true, "columns": true, "databases": true, "parts": true, "parts_columns": true,
	"data_skipping_indices": true, "functions": true, "table_functions": true,
	"aggregate_function_combinators": true, "data_type_families": true, "formats": true,
	"time_zones": true, "merges": true, "mutations": true, "metrics": true, "events": true,
	"asynchronous_metrics": true, "numbers": true, "numbers_mt": true, "one": true,
	"zeros": true, "zeros_mt": true, "keywords": true,
}

// consolePathColumns are the columns of readable system tables that show
// where the engine keeps its files on disk (lower case). A statement that
// reads one of consolePathTables may not name them, nor select * or
// COLUMNS(…) (which would include them).
var consolePathColumns = map[string]bool{
	"data_paths": true, "metadata_path": true, "data_path": true, "path": true,
	"source_part_paths": true, "result_part_path": true, "filenames": true,
}

// consolePathTables are the readable system tables holding consolePathColumns.
var consolePathTables = map[string]bool{
	"tables": true, "databases": true, "parts": true, "parts_columns": true, "merges": true,
}

// consoleSyntaxFunctions are function nodes of the syntax tree that the
// engine's system.functions does not list: lambdas and the IN family.
var consoleSyntaxFunctions = map[string]bool{"lambda": true, "exists": true}

// consoleDeniedFunctions are scalar functions (lower case) a console query may
// not call, whatever the allow-list says (a second line): they read files,
// reach other servers or tables by name, expose the host, the process, the
// user, its environment or the engine's settings, or only stall the engine.
// Names starting with "dict", "ai" + upper case or "__" are denied as families.
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
	"tcpport": true, "currentuser": true, "current_user": true, "user": true, "session_user": true,
	"authuser": true, "authenticateduser": true, "currentprofiles": true, "enabledprofiles": true,
	"defaultprofiles": true, "currentroles": true, "enabledroles": true, "defaultroles": true,
	"buildid": true, "revision": true, "version": true, "uptime": true, "connectionid": true,
	"connection_id": true, "queryid": true, "query_id": true, "current_query_id": true,
	"initial_query_id": true, "initialquerystarttime": true, "initial_query_start_time": true,
	"showcertificate": true, "globalvariable": true, "generateserialid": true, "shardnum": true,
	"shardcount": true, "fullhostname": true, "transactionid": true, "transactionlatestsnapshot": true,
	"transactionoldestsnapshot": true, "getmaxtablenamelengthfordatabase": true, "hasthreadfuzzer": true,
	"evalmlmethod": true, "naivebayesclassifierwithallprobs": true, "naivebayesclassifierwithprob": true,
	"tid": true, "mergetreepartinfo": true, "ismergetreepartcoveredby": true,
	"aiclassify": true, "aiembed": true, "aiextract": true, "aigenerate": true, "aitranslate": true,
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

// consoleGuard holds what the console check learns from the engine once: its
// functions, and which of them the console may call.
type consoleGuard struct {
	mu       sync.Mutex
	funcs    *functionPolicy
	slots    chan struct{}
	database string // unquoted: qualified table names must name it
	// unchecked turns the function allow-list and the analysis limits off
	// (tests only): a statement the console would refuse runs, so a test can
	// show the worker's time limit holds by itself.
	unchecked bool
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

// engineFunction is one row of the engine's system.functions.
type engineFunction struct {
	Name            string `json:"name"`
	IsAggregate     int64  `json:"is_aggregate"`
	CaseInsensitive int64  `json:"case_insensitive"`
	AliasTo         string `json:"alias_to"`
	Categories      string `json:"categories"`
}

// functionPolicy decides which function names a console query may call, from
// the engine's own list of its functions.
type functionPolicy struct {
	exact       map[string]engineFunction // by name
	folded      map[string]engineFunction // case-insensitive functions, by lower-case name
	combinators []string                  // aggregate combinator suffixes (If, Array, State …), longest first
	allowAll    bool                      // every function the engine has (tests only)
}

// lookup finds name as the engine would: exactly, or case-folded for a
// case-insensitive function.
func (p *functionPolicy) lookup(name string) (engineFunction, bool) {
	if f, ok := p.exact[name]; ok {
		return f, true
	}
	f, ok := p.folded[strings.ToLower(name)]
	return f, ok
}

// allowed reports whether the console may call name: a function (through its
// alias) of an allowed category or of the reviewed "Other" list, an allowed
// aggregate function with combinators (sumIf, uniqArrayIf), or lambda /
// exists.
func (p *functionPolicy) allowed(name string) bool {
	if consoleSyntaxFunctions[strings.ToLower(name)] {
		return true
	}
	if f, ok := p.resolve(name); ok {
		return p.permittedFunction(f)
	}
	return p.combinedAggregate(name)
}

// resolve looks name up and follows its aliases to the function itself.
func (p *functionPolicy) resolve(name string) (engineFunction, bool) {
	f, ok := p.lookup(name)
	for i := 0; ok && f.AliasTo != "" && i < 4; i++ {
		f, ok = p.lookup(f.AliasTo)
	}
	return f, ok && f.AliasTo == ""
}

// permittedFunction reports whether the console may call f (a function, not
// an alias): a scalar function of consoleFunctions or an aggregate function
// of consoleAggregates. When allowAll is set (tests that show the worker's
// time limit holds by itself) every function is.
func (p *functionPolicy) permittedFunction(f engineFunction) bool {
	if p.allowAll {
		return true
	}
	if f.IsAggregate == 1 {
		return consoleAggregates[f.Name]
	}
	return consoleFunctions[f.Name]
}

// combinedAggregate reports whether name is an allowed aggregate function
// followed by one or more combinator suffixes of consoleCombinators.
func (p *functionPolicy) combinedAggregate(name string) bool {
	for _, c := range p.combinators {
		base, cut := strings.CutSuffix(name, c)
		if !cut || base == "" || !consoleCombinators[c] && !p.allowAll {
			continue
		}
		if f, ok := p.resolve(base); ok {
			if f.IsAggregate == 1 && p.permittedFunction(f) {
				return true
			}
			continue
		}
		if p.combinedAggregate(base) {
			return true
		}
	}
	return false
}

// functionPolicy returns (and remembers) the engine's function list.
func (g *consoleGuard) functionPolicy(ctx context.Context, t transport) (*functionPolicy, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.funcs != nil {
		return g.funcs, nil
	}
	rows, err := queryRows[engineFunction](ctx, t, "SELECT name, toInt64(is_aggregate) AS is_aggregate, toInt64(case_insensitive) AS case_insensitive, alias_to, categories FROM system.functions")
	if err != nil {
		return nil, fmt.Errorf("store: query: list functions: %w", err)
	}
	type comb struct {
		Name string `json:"name"`
	}
	combs, err := queryRows[comb](ctx, t, "SELECT name FROM system.aggregate_function_combinators ORDER BY length(name) DESC, name")
	if err != nil {
		return nil, fmt.Errorf("store: query: list aggregate function combinators: %w", err)
	}
	p := &functionPolicy{exact: make(map[string]engineFunction, len(rows)), folded: map[string]engineFunction{}}
	for _, r := range rows {
		p.exact[r.Name] = r
		if r.CaseInsensitive == 1 {
			p.folded[strings.ToLower(r.Name)] = r
		}
	}
	for _, c := range combs {
		p.combinators = append(p.combinators, c.Name)
	}
	g.funcs = p
	return p, nil
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
		if err := tooBig(err); err != nil {
			return "", err
		}
		return "", fmt.Errorf("store: query: %w", shortError(err))
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
// funcs decides which functions it may call. It returns an error wrapping ErrReadOnly naming the first thing refused.
func (g *consoleGuard) checkAST(canon string, nodes []astNode, funcs *functionPolicy) error {
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

	// A read of a system table with disk paths may not name a path column
	// nor take whole rows (*, COLUMNS(…)).
	var (
		readsPaths, wholeRows bool
		pathNamed             string
	)
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
			if consoleDeniedFunctions[name] || strings.HasPrefix(name, "dict") || strings.HasPrefix(name, "__") || !funcs.allowed(n.name) {
				return refuse("function %s is not allowed: the console calls functions that compute on their arguments only, nothing that reaches files, URLs, other servers, the host or the engine's settings", n.name)
			}
		case "TableIdentifier":
			if err := g.checkTable(n.name); err != nil {
				return err
			}
			if db, table, ok := strings.Cut(n.name, "."); ok && db == "system" && consolePathTables[table] {
				readsPaths = true
			}
		case "Asterisk", "QualifiedAsterisk", "ColumnsRegexpMatcher", "ColumnsListMatcher",
			"QualifiedColumnsRegexpMatcher", "QualifiedColumnsListMatcher":
			wholeRows = true
		case "Identifier":
			last := n.name[strings.LastIndexByte(n.name, '.')+1:]
			if consolePathColumns[strings.ToLower(last)] {
				pathNamed = n.name
			}
			// x IN db.table reads a table named by an identifier.
			if parent.kind == "ExpressionList" && grand.kind == "Function" && inFunctions[strings.ToLower(grand.name)] && index[n.depth] == 1 {
				if err := g.checkTable(n.name); err != nil {
					return err
				}
			}
		}
	}
	if readsPaths && pathNamed != "" {
		return refuse("column %s is not readable from the console: it shows where the engine keeps its files", pathNamed)
	}
	if readsPaths && wholeRows {
		return refuse("select named columns of system.tables, databases, parts, parts_columns and merges (not * or COLUMNS): their disk paths are not readable from the console")
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

// The console's analysis limits: how big a statement may be, enforced by the
// engine (max_query_size and max_parser_depth for the worker's session,
// max_ast_elements, max_expanded_ast_elements and max_ast_depth with every
// statement) and checked again here, on the text and on the engine's syntax
// tree, before the statement runs. An analyst's statement is a few hundred
// elements; an 8,000-branch multiIf, which kept the engine's analyser busy
// for seconds, is about 40,000.
const (
	consoleMaxQueryBytes          = 64 << 10 // bytes of the statement's text
	consoleMaxASTElements         = 10_000   // nodes of its syntax tree
	consoleMaxExpandedASTElements = 50_000   // nodes once aliases and * are expanded (the engine's check)
	consoleMaxASTDepth            = 200      // depth of its syntax tree
	consoleMaxParserDepth         = 300      // the parser's recursion (the engine's check)
)

// checkQuerySize refuses a statement longer than consoleMaxQueryBytes.
func checkQuerySize(sql string) error {
	if len(sql) > consoleMaxQueryBytes {
		return fmt.Errorf("%w: the statement is %d bytes; the console takes at most %d", ErrReadOnly, len(sql), consoleMaxQueryBytes)
	}
	return nil
}

// tooBig returns ErrReadOnly naming the console's size limits when err is
// the engine refusing a statement over them (parse and analysis limits),
// nil otherwise.
func tooBig(err error) error {
	msg := err.Error()
	for _, code := range []string{"(TOO_DEEP_AST)", "(TOO_BIG_AST)", "Max query size exceeded", "(TOO_DEEP_RECURSION)", "(TOO_DEEP_SUBQUERIES)"} {
		if strings.Contains(msg, code) {
			return fmt.Errorf("%w: the statement is over the console's size limits (%d bytes, %d syntax elements, %d levels): %v",
				ErrReadOnly, consoleMaxQueryBytes, consoleMaxASTElements, consoleMaxASTDepth, shortError(err))
		}
	}
	return nil
}

// maxErrorBytes bounds an engine error in a console answer: the engine's
// message quotes the statement, which may be 64 KiB.
const maxErrorBytes = 1000

// shortError cuts err's text at maxErrorBytes.
func shortError(err error) error {
	msg := err.Error()
	if len(msg) <= maxErrorBytes {
		return err
	}
	return errors.New(msg[:maxErrorBytes] + "… (cut)")
}

// checkTreeSize refuses a syntax tree of more than consoleMaxASTElements
// nodes or deeper than consoleMaxASTDepth.
func checkTreeSize(nodes []astNode) error {
	if len(nodes) > consoleMaxASTElements {
		return fmt.Errorf("%w: the statement has %d syntax elements; the console takes at most %d", ErrReadOnly, len(nodes), consoleMaxASTElements)
	}
	for _, n := range nodes {
		if n.depth+1 > consoleMaxASTDepth {
			return fmt.Errorf("%w: the statement nests deeper than %d syntax levels", ErrReadOnly, consoleMaxASTDepth)
		}
	}
	return nil
}

// prepare runs steps 1–3 of the console check on t and returns the statement
// to run (step 4's text, settings appended).
func (g *consoleGuard) prepare(ctx context.Context, t transport, sql string, lim queryLimits) (string, error) {
	canon, err := g.check(ctx, t, sql)
	if err != nil {
		return "", err
	}
	return g.statement(canon, lim), nil
}

// check runs steps 1–3 of the console check, asking t's engine to parse sql,
// and returns the canonical statement.
func (g *consoleGuard) check(ctx context.Context, t transport, sql string) (string, error) {
	canon, _, err := g.checkReads(ctx, t, sql)
	return canon, err
}

// checkReads is check, also returning which tables of the database the
// statement may read (tablesRead).
func (g *consoleGuard) checkReads(ctx context.Context, t transport, sql string) (string, tableSet, error) {
	if err := CheckReadOnly(sql); err != nil {
		return "", tableSet{}, err
	}
	if !g.unchecked {
		if err := checkQuerySize(sql); err != nil {
			return "", tableSet{}, err
		}
	}
	canon, err := canonical(ctx, t, sql)
	if err != nil {
		return "", tableSet{}, err
	}
	if err := checkCanonical(canon); err != nil {
		return "", tableSet{}, err
	}
	funcs, err := g.functionPolicy(ctx, t)
	if err != nil {
		return "", tableSet{}, err
	}
	res, err := t.queryText(ctx, "EXPLAIN AST "+canon)
	if err != nil {
		if err := tooBig(err); err != nil {
			return "", tableSet{}, err
		}
		return "", tableSet{}, fmt.Errorf("store: query: %w", shortError(err))
	}
	var dump strings.Builder
	for _, r := range res.Rows {
		if len(r) != 1 {
			return "", tableSet{}, fmt.Errorf("store: query: unexpected syntax tree shape")
		}
		dump.WriteString(r[0])
		dump.WriteByte('\n')
	}
	nodes, err := parseAST(dump.String())
	if err != nil {
		return "", tableSet{}, fmt.Errorf("%w: %v", ErrReadOnly, err)
	}
	if !g.unchecked {
		if err := checkTreeSize(nodes); err != nil {
			return "", tableSet{}, err
		}
	}
	if g.unchecked {
		funcs = &functionPolicy{exact: funcs.exact, folded: funcs.folded, combinators: funcs.combinators, allowAll: true}
	}
	if err := g.checkAST(canon, nodes, funcs); err != nil {
		return "", tableSet{}, err
	}
	return canon, g.tablesRead(nodes), nil
}

// tableSet names tables of the store's database; all: every one.
type tableSet struct {
	all   bool
	names map[string]bool
}

func (ts tableSet) has(name string) bool { return ts.all || ts.names[name] }

// consoleSchemaTables are the readable system tables whose rows describe the
// database's tables (row counts, parts, columns, merges).
var consoleSchemaTables = map[string]bool{
	"tables": true, "columns": true, "parts": true, "parts_columns": true,
	"data_skipping_indices": true, "merges": true, "mutations": true,
}

// tablesRead returns the tables of the database a checked statement may
// read: every name its tree gives a table or an identifier (unqualified, or
// qualified by the database; a name that is no table is never looked up),
// or all of them when it reads information_schema or a system table of
// consoleSchemaTables (whose rows describe the others: parts, row counts).
func (g *consoleGuard) tablesRead(nodes []astNode) tableSet {
	ts := tableSet{names: map[string]bool{}}
	for _, n := range nodes {
		if n.kind != "TableIdentifier" && n.kind != "Identifier" {
			continue
		}
		db, table, qualified := strings.Cut(n.name, ".")
		switch {
		case !qualified:
			ts.names[n.name] = true
		case db == g.database:
			ts.names[table] = true
		case n.kind == "TableIdentifier" && (db != "system" || consoleSchemaTables[table]):
			ts.all = true // information_schema, or a system table describing the tables
		}
	}
	return ts
}

// statement is the canonical statement with the store's settings appended,
// as the console user's readonly setting allows (consoleGuard.userReadonly).
func (g *consoleGuard) statement(canon string, lim queryLimits) string {
	switch g.userReadonly {
	case 1:
		return canon
	case 2:
		return canon + "\nSETTINGS " + strings.TrimSuffix(lim.settings(), ", ")
	}
	return canon + "\nSETTINGS " + lim.settings() + "readonly = 1"
}
