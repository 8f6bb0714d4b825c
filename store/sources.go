package store

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
// production traffic: of no suite run, and not of a generated request
// (runs.generated, migration 0291); with generated, the runs of generated
// requests instead (OverviewQuery.Generated).
func liveRunSQL(generated bool) string {
	if generated {
		return "suite_run_id = '' AND generated"
	}
	return "suite_run_id = '' AND NOT generated"
}

// liveRequests is the condition on the requests table of OverviewQuery.Generated.
func liveRequests(generated bool) string {
	if generated {
		return generatedRequestSQL
	}
	return liveRequestSQL
}
