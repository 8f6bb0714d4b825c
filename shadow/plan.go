package shadow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Plan error kinds (PlanError.Kind).
const (
	// PlanUnparsable: no workflow could be read from the text.
	PlanUnparsable = "unparsable"
	// PlanUnequalLengths: model_id, subtasks and access_list differ in length.
	PlanUnequalLengths = "unequal_lengths"
	// PlanModelOutOfRange: a model id is negative or not below the pool size.
	PlanModelOutOfRange = "model_out_of_range"
	// PlanUnknownWorker: a step names a worker that is not in the conductor's pool.
	PlanUnknownWorker = "unknown_worker"
	// PlanForwardReference: an access list names a step that is not earlier.
	PlanForwardReference = "forward_reference"
	// PlanEmpty: three empty lists (meaningful only inside a recursive call).
	PlanEmpty = "empty"
	// PlanTooManySteps: more steps than ConductorConfig.MaxSteps.
	PlanTooManySteps = "too_many_steps"
	// PlanInvalidStep: a step is malformed (empty subtask, contradicting fields).
	PlanInvalidStep = "invalid_step"
	// PlanRecursionUnsupported: a step picks the conductor itself where recursion
	// is not allowed: Resolve, or a nested workflow at the depth cap
	// (ConductorConfig.MaxDepth).
	PlanRecursionUnsupported = "recursion_unsupported"
)

// PlanError is why a conductor's text did not give a runnable workflow.
type PlanError struct {
	Kind   string // one of the Plan* kinds above
	Detail string // human-readable, names the offending list, step or index
}

func (e *PlanError) Error() string { return "plan: " + e.Kind + ": " + e.Detail }

func planErr(kind, format string, args ...any) *PlanError {
	return &PlanError{Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

// Plan is a parsed workflow. Its JSON form, stored in store.Run.Plan, is
// {"steps":[{"worker":"gpt-5","model_id":2,"subtask":"...","access":"all"}]}.
type Plan struct {
	Steps []PlanStep `json:"steps"`
}

// PlanStep is one step of a workflow.
type PlanStep struct {
	// Worker is the pool worker's name; empty until Resolve when the conductor
	// gave only a model id.
	Worker string `json:"worker"`
	// ModelID indexes ConductorConfig.Pool ("Model 0..k"); -1 until Resolve when
	// the conductor named the worker instead.
	ModelID int    `json:"model_id"`
	Subtask string `json:"subtask"`
	Access  Access `json:"access"`
}

// Access is a step's access list: every earlier step (All) or the listed earlier
// step indices (Steps, ascending, no duplicates; empty means none). Its JSON form
// is "all", [] or [0,2].
type Access struct {
	All   bool
	Steps []int
}

// AccessAll is the access list "all".
func AccessAll() Access { return Access{All: true} }

// AccessSteps is the access list naming the given earlier steps (sorted, without
// duplicates; no indices gives the empty list, Steps nil).
func AccessSteps(idx ...int) Access {
	if len(idx) == 0 {
		return Access{}
	}
	s := slices.Clone(idx)
	slices.Sort(s)
	return Access{Steps: slices.Compact(s)}
}

// Visible returns the indices of the earlier steps step i sees, ascending.
func (a Access) Visible(i int) []int {
	if !a.All {
		return slices.Clone(a.Steps)
	}
	out := make([]int, i)
	for j := range out {
		out[j] = j
	}
	return out
}

// MarshalJSON renders "all", [] or [0,2].
func (a Access) MarshalJSON() ([]byte, error) {
	if a.All {
		return []byte(`"all"`), nil
	}
	if a.Steps == nil {
		return []byte(`[]`), nil
	}
	return json.Marshal(a.Steps)
}

// UnmarshalJSON reads "all" (any case) or a list of integers.
func (a *Access) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if !strings.EqualFold(strings.TrimSpace(s), "all") {
			return fmt.Errorf("access %q: want \"all\" or a list of step indices", s)
		}
		*a = AccessAll()
		return nil
	}
	var idx []int
	if err := json.Unmarshal(b, &idx); err != nil {
		return fmt.Errorf("access %s: want \"all\" or a list of step indices", b)
	}
	*a = AccessSteps(idx...)
	return nil
}

// String returns the JSON form.
func (a Access) String() string {
	b, _ := a.MarshalJSON()
	return string(b)
}

// JSON returns the plan's JSON form (the shape stored in store.Run.Plan).
func (p Plan) JSON() string {
	b, err := json.Marshal(p)
	if err != nil { // cannot happen: only strings, ints and Access
		return ""
	}
	return string(b)
}

var (
	reModelID    = regexp.MustCompile(`\bmodel_ids?\s*=`)
	reSubtasks   = regexp.MustCompile(`\bsubtasks\s*=`)
	reAccessList = regexp.MustCompile(`\baccess_lists?\s*=`)
	reFence      = regexp.MustCompile("(?s)```[A-Za-z]*[ \t]*\r?\n(.*?)```")
	reStepsObj   = regexp.MustCompile(`\{\s*"steps"\s*:`)
	reListsObj   = regexp.MustCompile(`\{\s*"(?:model_ids?|subtasks|access_lists?)"\s*:`)
)

// ParsePlan reads a workflow from a conductor's text. Two forms are accepted:
//
//   - the paper's: free text, then three Python list literals
//     model_id = [...], subtasks = [...], access_list = [...] (strings in single or
//     double quotes with Python escapes, adjacent strings concatenated, nested
//     lists or tuples, "all"); when a list is written more than once the last
//     occurrence that parses is used;
//   - JSON: {"steps":[{"worker":"<name or index>","subtask":"...","access":"all"|[...]}]},
//     bare or inside a ``` fence (a "model_id" field is also accepted; a missing
//     access means "all", null means none, a bare index that one step);
//   - JSON with the paper's lists as keys: {"model_id":[...],"subtasks":[...],
//     "access_list":[...]}, read exactly as the Python lists.
//
// In an access list, "all" means every earlier step, a list names earlier steps,
// a bare index names that one step, and None / null (like []) means none.
//
// The result is checked for structure only (equal lengths, access indices that
// name earlier steps, non-empty subtasks, non-negative model ids); Resolve checks it
// against the pool. Errors are *PlanError; three empty lists give Kind PlanEmpty.
func ParsePlan(text string) (Plan, error) {
	lists, listErr := findPaperLists(text)
	if listErr == nil {
		return planFromLists(lists)
	}
	if p, ok, err := findJSONPlan(text); ok {
		if err != nil {
			return Plan{}, err
		}
		return p, nil
	}
	return Plan{}, listErr
}

type paperLists struct {
	models, subtasks, access pyValue
}

// maxListAttempts bounds how many occurrences of one list name are tried.
const maxListAttempts = 16

// findPaperLists returns the last parseable occurrence of each of the three lists.
func findPaperLists(text string) (paperLists, *PlanError) {
	var out paperLists
	var missing, broken []string
	for _, l := range []struct {
		name string
		re   *regexp.Regexp
		dst  *pyValue
	}{
		{"model_id", reModelID, &out.models},
		{"subtasks", reSubtasks, &out.subtasks},
		{"access_list", reAccessList, &out.access},
	} {
		locs := l.re.FindAllStringIndex(text, -1)
		var lastErr error
		found := false
		// Try the last occurrences first; at most maxListAttempts of them, so a
		// hostile text cannot make parsing quadratic.
		for i := len(locs) - 1; i >= 0 && i >= len(locs)-maxListAttempts; i-- {
			end := locs[i][1]
			if end < len(text) && text[end] == '=' { // "==" is a comparison
				continue
			}
			v, _, err := parsePyList(text, end)
			if err != nil {
				if lastErr == nil {
					lastErr = err
				}
				continue
			}
			*l.dst = v
			found = true
			break
		}
		switch {
		case found:
		case lastErr != nil:
			broken = append(broken, fmt.Sprintf("%s: %v", l.name, lastErr))
		default:
			missing = append(missing, l.name)
		}
	}
	switch {
	case len(broken) > 0:
		return out, planErr(PlanUnparsable, "%s", strings.Join(broken, "; "))
	case len(missing) == 3:
		return out, planErr(PlanUnparsable, "no workflow found: want model_id, subtasks and access_list lists or a JSON {\"steps\": [...]} object")
	case len(missing) > 0:
		return out, planErr(PlanUnparsable, "missing list(s): %s", strings.Join(missing, ", "))
	}
	return out, nil
}

func planFromLists(l paperLists) (Plan, error) {
	n := len(l.models.list)
	if len(l.subtasks.list) != n || len(l.access.list) != n {
		return Plan{}, planErr(PlanUnequalLengths, "model_id has %d items, subtasks %d, access_list %d",
			n, len(l.subtasks.list), len(l.access.list))
	}
	steps := make([]PlanStep, n)
	for i := range n {
		st := PlanStep{ModelID: -1}
		switch m := l.models.list[i]; m.kind {
		case pyInt:
			if m.i < 0 || m.i > 1<<20 {
				return Plan{}, planErr(PlanModelOutOfRange, "model_id[%d] = %d", i, m.i)
			}
			st.ModelID = int(m.i)
		case pyStr:
			if err := st.setWorkerRef(i, m.s); err != nil {
				return Plan{}, err
			}
		default:
			return Plan{}, planErr(PlanUnparsable, "model_id[%d]: want an integer, got a %s", i, m.kind)
		}
		if s := l.subtasks.list[i]; s.kind != pyStr {
			return Plan{}, planErr(PlanUnparsable, "subtasks[%d]: want a string, got a %s", i, s.kind)
		} else {
			st.Subtask = s.s
		}
		acc, err := accessFromPy(i, l.access.list[i])
		if err != nil {
			return Plan{}, err
		}
		st.Access = acc
		steps[i] = st
	}
	return checkStructure(Plan{Steps: steps})
}

// accessFromPy reads access_list[i]: "all" (any case); a list of earlier step
// indices; a bare index, meaning that one step; None (null), [], "none" or "",
// meaning none. An index written as a string of digits ("0") counts as that index.
func accessFromPy(i int, a pyValue) (Access, error) {
	if a.kind == pyStr {
		switch t := strings.ToLower(strings.TrimSpace(a.s)); {
		case t == "" || t == "none" || t == "null" || t == "[]":
			return AccessSteps(), nil
		default:
			if n, err := strconv.ParseInt(t, 10, 64); err == nil {
				a = pyValue{kind: pyInt, i: n}
			}
		}
	}
	index := func(e pyValue) (int, error) {
		if e.kind == pyStr {
			if n, err := strconv.ParseInt(strings.TrimSpace(e.s), 10, 64); err == nil {
				e = pyValue{kind: pyInt, i: n}
			}
		}
		if e.kind != pyInt {
			return 0, planErr(PlanUnparsable, "access_list[%d]: want step indices, got a %s", i, e.kind)
		}
		if e.i < 0 || e.i >= int64(i) {
			return 0, planErr(PlanForwardReference, "access_list[%d] names step %d, which is not earlier", i, e.i)
		}
		return int(e.i), nil
	}
	switch a.kind {
	case pyStr:
		if !strings.EqualFold(strings.TrimSpace(a.s), "all") {
			return Access{}, planErr(PlanUnparsable, "access_list[%d]: want \"all\" or a list of step indices, got %q", i, a.s)
		}
		return AccessAll(), nil
	case pyNone:
		return AccessSteps(), nil
	case pyInt:
		j, err := index(a)
		if err != nil {
			return Access{}, err
		}
		return AccessSteps(j), nil
	default:
		idx := make([]int, 0, len(a.list))
		for _, e := range a.list {
			j, err := index(e)
			if err != nil {
				return Access{}, err
			}
			idx = append(idx, j)
		}
		return AccessSteps(idx...), nil
	}
}

// setWorkerRef reads a worker given as text: digits are a model id, anything else
// a worker name.
func (st *PlanStep) setWorkerRef(i int, ref string) error {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return planErr(PlanInvalidStep, "step %d: empty worker", i)
	}
	if n, err := strconv.Atoi(ref); err == nil {
		if n < 0 || n > 1<<20 {
			return planErr(PlanModelOutOfRange, "step %d: model id %d", i, n)
		}
		st.ModelID = n
		return nil
	}
	st.Worker = ref
	return nil
}

// checkStructure applies the checks common to both forms.
func checkStructure(p Plan) (Plan, error) {
	if len(p.Steps) == 0 {
		return Plan{Steps: []PlanStep{}}, planErr(PlanEmpty, "the workflow has no steps")
	}
	for i, st := range p.Steps {
		if strings.TrimSpace(st.Subtask) == "" {
			return Plan{}, planErr(PlanInvalidStep, "step %d: empty subtask", i)
		}
		if !st.Access.All {
			for _, j := range st.Access.Steps {
				if j < 0 || j >= i {
					return Plan{}, planErr(PlanForwardReference, "step %d's access list names step %d, which is not earlier", i, j)
				}
			}
		}
	}
	return p, nil
}

type jsonStep struct {
	Worker  json.RawMessage `json:"worker"`
	ModelID json.RawMessage `json:"model_id"`
	Subtask *string         `json:"subtask"`
	Access  json.RawMessage `json:"access"`
}

// findJSONPlan looks for a JSON object with a "steps" key: in ``` fences (last
// first), as the whole text, then at each `{"steps":` (last first). ok reports
// whether such an object was found.
func findJSONPlan(text string) (Plan, bool, error) {
	var candidates []string
	fences := reFence.FindAllStringSubmatch(text, -1)
	for i := len(fences) - 1; i >= 0; i-- {
		candidates = append(candidates, fences[i][1])
	}
	candidates = append(candidates, text)
	for _, c := range candidates {
		if obj, ok := decodePlanObject(strings.TrimSpace(c), false); ok {
			p, err := obj.plan()
			return p, true, err
		}
	}
	for _, re := range []*regexp.Regexp{reStepsObj, reListsObj} {
		locs := re.FindAllStringIndex(text, -1)
		for i := len(locs) - 1; i >= 0; i-- {
			if obj, ok := decodePlanObject(text[locs[i][0]:], true); ok {
				p, err := obj.plan()
				return p, true, err
			}
		}
	}
	return Plan{}, false, nil
}

// planObject is a JSON workflow: {"steps": [...]} or the paper's three lists
// as keys, {"model_id": [...], "subtasks": [...], "access_list": [...]}.
type planObject struct {
	steps json.RawMessage
	lists map[string]json.RawMessage
}

func (o planObject) plan() (Plan, error) {
	if o.steps != nil {
		return planFromJSON(o.steps)
	}
	return planFromJSONLists(o.lists)
}

// listKeys are the paper's list names as JSON keys, with the spellings the
// paper-form parser accepts.
var listKeys = [3][]string{{"model_id", "model_ids"}, {"subtasks"}, {"access_list", "access_lists"}}

// planFromJSONLists reads {"model_id": [...], "subtasks": [...], "access_list": [...]}
// exactly as the paper's Python lists (null standing for None).
func planFromJSONLists(obj map[string]json.RawMessage) (Plan, error) {
	var vals [3]pyValue
	for k, names := range listKeys {
		var raw json.RawMessage
		for _, n := range names {
			if r, ok := obj[n]; ok {
				raw = r
			}
		}
		if raw == nil {
			return Plan{}, planErr(PlanUnparsable, "JSON workflow: missing key %q", names[0])
		}
		var v any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			return Plan{}, planErr(PlanUnparsable, "JSON workflow: %s: %v", names[0], err)
		}
		pv, err := pyFromJSON(v, 0)
		if err != nil {
			return Plan{}, planErr(PlanUnparsable, "JSON workflow: %s: %v", names[0], err)
		}
		if pv.kind != pyList {
			return Plan{}, planErr(PlanUnparsable, "JSON workflow: %s: want a list, got a %s", names[0], pv.kind)
		}
		vals[k] = pv
	}
	return planFromLists(paperLists{models: vals[0], subtasks: vals[1], access: vals[2]})
}

// pyFromJSON converts a decoded JSON value to the Python literal it stands for.
func pyFromJSON(v any, depth int) (pyValue, error) {
	if depth > maxPyDepth {
		return pyValue{}, fmt.Errorf("lists nested deeper than %d", maxPyDepth)
	}
	switch x := v.(type) {
	case nil:
		return pyValue{kind: pyNone}, nil
	case string:
		return pyValue{kind: pyStr, s: x}, nil
	case json.Number:
		n, err := x.Int64()
		if err != nil {
			return pyValue{}, fmt.Errorf("%s is not an integer", x)
		}
		return pyValue{kind: pyInt, i: n}, nil
	case []any:
		out := pyValue{kind: pyList, list: make([]pyValue, 0, len(x))}
		for _, e := range x {
			pv, err := pyFromJSON(e, depth+1)
			if err != nil {
				return pyValue{}, err
			}
			out.list = append(out.list, pv)
		}
		return out, nil
	default:
		return pyValue{}, fmt.Errorf("want a list, a string, an integer or null, got %T", v)
	}
}

// decodePlanObject decodes s (or, with prefix, its first JSON value) as an
// object holding a "steps" key or the "model_id"/"subtasks"/"access_list" keys.
func decodePlanObject(s string, prefix bool) (planObject, bool) {
	if !strings.HasPrefix(s, "{") {
		return planObject{}, false
	}
	var obj map[string]json.RawMessage
	if prefix {
		if err := json.NewDecoder(strings.NewReader(s)).Decode(&obj); err != nil {
			return planObject{}, false
		}
	} else if err := json.Unmarshal([]byte(s), &obj); err != nil {
		return planObject{}, false
	}
	if steps, ok := obj["steps"]; ok {
		return planObject{steps: steps}, true
	}
	for _, names := range listKeys {
		for _, n := range names {
			if _, ok := obj[n]; ok {
				return planObject{lists: obj}, true
			}
		}
	}
	return planObject{}, false
}

func planFromJSON(raw json.RawMessage) (Plan, error) {
	var js []jsonStep
	if err := json.Unmarshal(raw, &js); err != nil {
		return Plan{}, planErr(PlanUnparsable, "JSON steps: want a list of {worker, subtask, access} objects: %v", err)
	}
	steps := make([]PlanStep, len(js))
	for i, s := range js {
		st := PlanStep{ModelID: -1, Access: AccessAll()}
		if err := st.setJSONWorker(i, s.Worker); err != nil {
			return Plan{}, err
		}
		if len(s.ModelID) > 0 && string(s.ModelID) != "null" {
			var id int
			if err := json.Unmarshal(s.ModelID, &id); err != nil {
				return Plan{}, planErr(PlanUnparsable, "step %d: model_id %s: want an integer", i, s.ModelID)
			}
			if id < 0 || id > 1<<20 {
				return Plan{}, planErr(PlanModelOutOfRange, "step %d: model_id %d", i, id)
			}
			if st.ModelID >= 0 && st.ModelID != id {
				return Plan{}, planErr(PlanInvalidStep, "step %d: worker says model %d, model_id says %d", i, st.ModelID, id)
			}
			st.ModelID = id // checked against a worker name in Resolve
		}
		if st.Worker == "" && st.ModelID < 0 {
			return Plan{}, planErr(PlanInvalidStep, "step %d: no worker", i)
		}
		if s.Subtask == nil {
			return Plan{}, planErr(PlanInvalidStep, "step %d: no subtask", i)
		}
		st.Subtask = *s.Subtask
		if len(s.Access) > 0 {
			var v any
			d := json.NewDecoder(bytes.NewReader(s.Access))
			d.UseNumber()
			if err := d.Decode(&v); err != nil {
				return Plan{}, planErr(PlanUnparsable, "step %d: access %s: %v", i, s.Access, err)
			}
			pv, err := pyFromJSON(v, 0)
			if err != nil {
				return Plan{}, planErr(PlanUnparsable, "step %d: access %s: want \"all\" or a list of step indices", i, s.Access)
			}
			acc, err := accessFromPy(i, pv)
			if err != nil {
				return Plan{}, err
			}
			st.Access = acc
		}
		steps[i] = st
	}
	return checkStructure(Plan{Steps: steps})
}

func (st *PlanStep) setJSONWorker(i int, raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var name string
	if err := json.Unmarshal(raw, &name); err == nil {
		return st.setWorkerRef(i, name)
	}
	var id int
	if err := json.Unmarshal(raw, &id); err != nil {
		return planErr(PlanUnparsable, "step %d: worker %s: want a name or a model index", i, raw)
	}
	if id < 0 || id > 1<<20 {
		return planErr(PlanModelOutOfRange, "step %d: model id %d", i, id)
	}
	st.ModelID = id
	return nil
}

// Resolve checks the plan against the conductor's pool (the worker names shown as
// Model 0..k) and fills each step's Worker and ModelID. conductor is the worker
// playing the conductor (a step that picks it is PlanRecursionUnsupported);
// maxSteps > 0 caps the number of steps. Errors are *PlanError.
func (p Plan) Resolve(pool []string, conductor string, maxSteps int) (Plan, error) {
	return p.resolve(pool, conductor, maxSteps, false)
}

// resolve is Resolve; allowSelf lets steps pick the conductor (a recursive call
// that the conductor pipeline runs as a nested workflow).
func (p Plan) resolve(pool []string, conductor string, maxSteps int, allowSelf bool) (Plan, error) {
	if len(p.Steps) == 0 {
		return Plan{}, planErr(PlanEmpty, "the workflow has no steps")
	}
	if maxSteps > 0 && len(p.Steps) > maxSteps {
		return Plan{}, planErr(PlanTooManySteps, "%d steps, at most %d allowed", len(p.Steps), maxSteps)
	}
	out := Plan{Steps: make([]PlanStep, len(p.Steps))}
	for i, st := range p.Steps {
		if st.Worker != "" {
			id := slices.Index(pool, st.Worker)
			if id < 0 {
				return Plan{}, planErr(PlanUnknownWorker, "step %d: worker %q is not in the pool %v", i, st.Worker, pool)
			}
			if st.ModelID >= 0 && st.ModelID != id {
				return Plan{}, planErr(PlanInvalidStep, "step %d: worker %q is Model %d, but model_id says %d", i, st.Worker, id, st.ModelID)
			}
			st.ModelID = id
		} else {
			if st.ModelID < 0 || st.ModelID >= len(pool) {
				return Plan{}, planErr(PlanModelOutOfRange, "step %d: model id %d, the pool has Models 0..%d", i, st.ModelID, len(pool)-1)
			}
			st.Worker = pool[st.ModelID]
		}
		if conductor != "" && st.Worker == conductor && !allowSelf {
			return Plan{}, planErr(PlanRecursionUnsupported, "step %d picks the conductor itself (Model %d); recursion is not allowed here", i, st.ModelID)
		}
		if !st.Access.All {
			st.Access = AccessSteps(st.Access.Steps...)
		}
		out.Steps[i] = st
	}
	return checkStructure(out)
}
