package store

import "fmt"

// LiveSources are the requests' sources that are production traffic:
// tapped copies and replayed recordings. Suite cases (SourceSuite) and
// generated load-test rows (SourceGenerated) never count as production:
// the overview, running verdicts, shift, set building and the Grafana
// dashboards select requests with liveRequestSQL, and runs with
// liveRunSQL.
var LiveSources = []string{SourceTap, SourceReplay}

// liveRequestSQL is the condition on the requests table selecting production
// traffic (LiveSources).
const liveRequestSQL = "source IN ('tap', 'replay')"

// generatedRequestSQL selects the generated load-test requests.
const generatedRequestSQL = "source = 'generated'"

// liveRunSQL is the condition on the runs table selecting the runs of
// production traffic: of no suite run, and not of a generated request; with
// generated, the runs of generated requests instead (OverviewQuery.Generated).
func (s *sqlStore) liveRunSQL(generated bool) string {
	if generated {
		return fmt.Sprintf("suite_run_id = '' AND request_id IN (SELECT request_id FROM %s.requests WHERE %s)", s.db, generatedRequestSQL)
	}
	return fmt.Sprintf("suite_run_id = '' AND request_id NOT IN (SELECT request_id FROM %s.requests WHERE %s)", s.db, generatedRequestSQL)
}

// liveRequests is the condition on the requests table of OverviewQuery.Generated.
func liveRequests(generated bool) string {
	if generated {
		return generatedRequestSQL
	}
	return liveRequestSQL
}
