package events

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record/util"

	"github.com/heraldgo/herald/k8sadapter/internal/kube"
	"github.com/heraldgo/herald/k8sadapter/internal/pipeline"
)

// adapter is what the pipeline needs of events.k8s.io (pipeline.Adapter):
// how events fold in the writer's queue (queue.go), how the writer's
// counters add up, and client-go's rules for its errors and retries.
type adapter struct {
	sleep time.Duration // WithSleepDuration
}

// Pause is client-go's spacing of attempts, wait.Jitter(sleep, 0.25):
// each pause is sleep plus up to a quarter more.
func (a adapter) Pause(int) time.Duration {
	return a.sleep + time.Duration(rand.Float64()*0.25*float64(a.sleep))
}

// AddCounts adds the writer's counters o to c (there is one writer).
func (adapter) AddCounts(c *writerCounts, o writerCounts) {
	c.Counts.Add(o.Counts)
	c.seriesObserved += o.seriesObserved
	c.evicted += o.evicted
	c.seriesWrites += o.seriesWrites
	c.seriesWriteFailures += o.seriesWriteFailures
	c.seriesUnwritten += o.seriesUnwritten
}

// Classify is client-go's recordEvent classification for events.k8s.io:
// every StatusError is final, except AlreadyExists for a series (the
// create of its first occurrence raced the patch, so another attempt
// finds it); AlreadyExists is expected, and logged at V(5). 403 Forbidden
// is a class of its own (pipeline.ClassOf), counted in FailedForbidden
// and logged once per burst.
func (adapter) Classify(err error, ev *eventsv1.Event) (pipeline.Class, bool) {
	c := pipeline.ClassOf(err)
	if c != pipeline.Rejected || !apierrors.IsAlreadyExists(err) {
		return c, false
	}
	if ev.Series != nil {
		return pipeline.Retry, true
	}
	return c, true
}

// write makes one attempt, client-go's recordEvent: patch a series (create
// when the event is gone), create otherwise. The sink calls take the
// writer's context, which ends when the shutdown's deadline passes.
func (wr *writer) write(ev *eventsv1.Event) (got *eventsv1.Event, created bool, err error) {
	series := ev.Series != nil
	if series {
		patch, perr := seriesPatch(ev)
		if perr != nil {
			wr.w.Logger.Error(perr, "Unable to calculate diff, no merge is possible")
			return nil, false, &rest.RequestConstructionError{Err: perr}
		}
		got, err = kube.Call(func() (*eventsv1.Event, error) { return wr.e.sink.Patch(wr.ctx, ev, patch) })
		if util.IsKeyNotFoundError(err) && wr.aborted() {
			return nil, false, pipeline.ErrAbandoned // no Create after the deadline
		}
	}
	if !series || util.IsKeyNotFoundError(err) {
		created = true
		ev.ResourceVersion = ""
		got, err = kube.Call(func() (*eventsv1.Event, error) { return wr.e.sink.Create(wr.ctx, ev) })
	}
	return got, created, err
}

// seriesPatch is client-go's createPatchBytesForSeries, the strategic
// merge patch from the event without its series to the event, byte for
// byte (FuzzSeriesPatch): the two differ in the series only, so the patch
// is the series, built here without the JSON diff that costs client-go a
// third of a burst's CPU (BenchmarkBurst, workload=repeats). A zero time,
// which encodes as null, takes client-go's way.
func seriesPatch(ev *eventsv1.Event) ([]byte, error) {
	s := ev.Series
	if s == nil || s.LastObservedTime.IsZero() {
		return diffPatch(ev)
	}
	buf := make([]byte, 0, 80)
	buf = append(buf, `{"series":{"count":`...)
	buf = strconv.AppendInt(buf, int64(s.Count), 10)
	buf = append(buf, `,"lastObservedTime":"`...)
	buf = s.LastObservedTime.UTC().AppendFormat(buf, metav1.RFC3339Micro)
	return append(buf, `"}}`...), nil
}

// diffPatch is client-go's createPatchBytesForSeries.
func diffPatch(ev *eventsv1.Event) ([]byte, error) {
	old := ev.DeepCopy()
	old.Series = nil
	oldData, err := json.Marshal(old)
	if err != nil {
		return nil, err
	}
	newData, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	return strategicpatch.CreateTwoWayMergePatch(oldData, newData, eventsv1.Event{})
}
