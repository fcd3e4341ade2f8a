package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/projector"
	"github.com/drovehq/drove/projector/notary"
	"github.com/drovehq/drove/test/testenv"
)

// checkPointInTime: for moments in the middle of the evacuation, drove
// replay --at and GET /v1/instances?at= give the placements the live view
// showed then.
//
// The live view read at some moment is what the projector had folded by
// then; the past view at T folds every record stamped at or before T.
// They are the same fold of the same records when, at the offsets the
// view had reached, every inventory record folded was stamped at or
// before T and every one not yet folded after it: T is then the newest
// stamp folded, a moment the view was exact even when the projector was
// behind the log when it was read (as it always is, on a loaded machine,
// in the middle of an evacuation). The test finds that moment from the log
// itself for each sample; samples without one (a record stamped earlier
// still on its way to the views) are compared by their offsets instead
// (--at positions), which is exact for any sample.
func checkPointInTime(t *testing.T, e *env, bin string, samples []snapshot) {
	ctx := context.Background()
	raw, err := notary.ReadRaw(ctx, e.kcfg, events.TopicInventory)
	if err != nil {
		t.Fatal(err)
	}
	exactAt := func(s snapshot) (time.Time, bool) {
		newest, oldestLeft := int64(0), int64(math.MaxInt64)
		for p, recs := range raw {
			for _, r := range recs {
				if r.Offset < s.offsets[p.Topic][p.Partition] {
					newest = max(newest, r.TimestampMill)
				} else {
					oldestLeft = min(oldestLeft, r.TimestampMill)
				}
			}
		}
		return time.UnixMilli(newest), newest < oldestLeft
	}
	first, last := samples[0].where, samples[len(samples)-1].where
	var mid, exact []snapshot
	for _, s := range samples {
		if !maps.Equal(s.where, first) && !maps.Equal(s.where, last) {
			mid = append(mid, s)
			if at, ok := exactAt(s); ok {
				s.at = at
				exact = append(exact, s)
			}
		}
	}
	t.Logf("%d samples of the live view, %d in the middle of the evacuation, %d of them exact at a moment", len(samples), len(mid), len(exact))
	if len(exact) == 0 {
		t.Fatalf("no sample of the live view in the middle of the evacuation was the fold of the records stamped up to a moment")
	}
	env := []string{"DATABASE_URL=" + e.sys.Pool.Config().ConnString()}
	env = append(env, testenv.KafkaEnv(e.kcfg)...)
	pick := []snapshot{exact[0], exact[len(exact)/2]}
	for _, s := range pick {
		at := s.at.UTC().Format(time.RFC3339Nano)
		name := replayAt(t, bin, env, at)
		if got := placementsIn(t, e, name); !maps.Equal(got, s.where) {
			t.Errorf("replay --at %s: %s differs from the live view then:\n%s", at, name, diffPlaces(got, s.where))
		}
		var list struct {
			Items []instance `json:"items"`
		}
		if err := e.api.Get(ctx, "/v1/instances?limit=1000&at="+at, &list); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, in := range list.Items {
			got[in.Name] = in.Primary + "+" + in.Secondary
		}
		if !maps.Equal(got, s.where) {
			t.Errorf("GET /v1/instances?at=%s differs from the live view then:\n%s", at, diffPlaces(got, s.where))
		}
	}
	// By log positions: exact for any sample.
	s := mid[len(mid)/2]
	var pos []string
	for _, topic := range slices.Sorted(maps.Keys(s.offsets)) {
		for _, p := range slices.Sorted(maps.Keys(s.offsets[topic])) {
			pos = append(pos, fmt.Sprintf("%s/%d@%d", topic, p, s.offsets[topic][p]))
		}
	}
	name := replayAt(t, bin, env, strings.Join(pos, ","))
	if got := placementsIn(t, e, name); !maps.Equal(got, s.where) {
		t.Errorf("replay --at the live view's offsets differs from it:\n%s", diffPlaces(got, s.where))
	}

	out, code := drove(t, bin, env, "replay", "--list")
	if code != 0 || !strings.Contains(out, name) {
		t.Errorf("replay --list (exit %d) does not list %s:\n%s", code, name, out)
	}
	if _, code := drove(t, bin, env, "replay", "--drop", name); code != 0 {
		t.Errorf("replay --drop: exit %d", code)
	}
	if out, _ := drove(t, bin, env, "replay", "--list"); strings.Contains(out, name) {
		t.Errorf("%s still listed after --drop", name)
	}
}

// replayAt runs drove replay --at bound and returns the schema's name.
func replayAt(t *testing.T, bin string, env []string, bound string) string {
	t.Helper()
	out, code := drove(t, bin, env, "replay", "--at", bound, "--json")
	var v projector.AsOfView
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil || v.Name == "" {
		t.Fatalf("replay --at %s: exit %d, %v\n%s", bound, code, err, out)
	}
	t.Logf("replay --at %s: %s, %d events, built in %s", bound, v.Name, v.Events, v.Took)
	return v.Name
}

// placementsIn reads the instances of a point-in-time schema with SQL.
func placementsIn(t *testing.T, e *env, schema string) map[string]string {
	t.Helper()
	rows, err := e.sys.Pool.Query(context.Background(),
		`SELECT name, primary_node || '+' || secondary_node FROM `+pgx.Identifier{schema}.Sanitize()+`.instances`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var name, place string
	if _, err := pgx.ForEachRow(rows, []any{&name, &place}, func() error { out[name] = place; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func diffPlaces(got, want map[string]string) string {
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(want)) {
		if got[n] != want[n] {
			fmt.Fprintf(&b, "  %s: %q, live %q\n", n, got[n], want[n])
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			fmt.Fprintf(&b, "  %s: %q, not in the live view\n", n, got[n])
		}
	}
	return b.String()
}
