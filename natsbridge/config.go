package natsbridge

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A topic's identity and configuration, as its stream records them.
//
// One owner configures a topic: NewTopic creates the stream with the
// caller's options, and on a stream that exists it opens it as it is when
// the options are zero, checks them when they are not (every difference
// is an error that names it), and changes the stream only when asked
// (TopicOptions.Update). What a topic carries is recorded with it: a
// schema name and the codec's name; a process whose schema or codec
// differs is refused (ErrTypeMismatch).

// Stream metadata keys herald sets, so that a second process can tell
// whether a stream it finds holds its topic.
const (
	metaTopic  = "herald.topic"
	metaSchema = "herald.schema" // TopicOptions.Schema, or the name derived from T
	metaShape  = "herald.shape"  // a digest of T's shape, set with a derived schema
	metaCodec  = "herald.codec"
	metaType   = "herald.type" // T's Go type, for a reader of the metadata
)

// identity is what a topic's stream records of the values it carries.
type identity struct {
	schema  string
	shape   string // "" with a schema named by the caller
	codec   string
	goType  string
	derived bool // the schema was derived from T
}

func identityOf[T any](c Codec[T], schema string) identity {
	t := reflect.TypeFor[T]()
	id := identity{schema: schema, codec: codecName(c), goType: typeName(t)}
	if schema == "" {
		id.schema, id.shape, id.derived = typeName(t), shapeOf(t), true
	}
	return id
}

func (id identity) metadata(topic string) map[string]string {
	m := map[string]string{metaTopic: topic, metaSchema: id.schema, metaCodec: id.codec, metaType: id.goType}
	if id.shape != "" {
		m[metaShape] = id.shape
	}
	return m
}

// check reports whether a stream whose metadata is m carries values of id.
// A stream made by an earlier herald records only the Go type.
func (id identity) check(stream string, m map[string]string) error {
	schema, ok := m[metaSchema]
	if !ok {
		if got := m[metaType]; got != "" && got != id.goType {
			return fmt.Errorf("%w: stream %q carries %s, not %s", ErrTypeMismatch, stream, got, id.goType)
		}
		return nil
	}
	switch {
	case schema != id.schema:
		return fmt.Errorf("%w: stream %q carries schema %q, not %q (set TopicOptions.Schema to the same name in every process that opens the topic)", ErrTypeMismatch, stream, schema, id.schema)
	case m[metaCodec] != id.codec:
		return fmt.Errorf("%w: stream %q is written with codec %q, not %q", ErrTypeMismatch, stream, m[metaCodec], id.codec)
	case id.derived && m[metaShape] != "" && m[metaShape] != id.shape:
		return fmt.Errorf("%w: stream %q carries %s of another shape (digest %s, here %s): two types share one name, a type local to a function or a type changed since the stream was made; name the schema (TopicOptions.Schema) in every process that opens the topic",
			ErrTypeMismatch, stream, id.schema, m[metaShape], id.shape)
	}
	return nil
}

// recordedIn reports whether the metadata m records id's schema and
// codec.
func (id identity) recordedIn(m map[string]string) bool {
	return m[metaSchema] == id.schema && m[metaCodec] == id.codec
}

// typeName names a Go type: the package path and name of a named type,
// the type's spelling otherwise.
func typeName(t reflect.Type) string {
	if t.Name() != "" && t.PkgPath() != "" {
		return t.PkgPath() + "." + t.Name()
	}
	return t.String()
}

// shapeOf returns a digest of what a codec sees of t: for a struct, each
// field's name, type and tag, in order; for any other type, its spelling.
// Two types named alike (types local to two functions share a name and a
// package path: reflection cannot tell them apart) share a derived schema
// only if their shapes match too.
func shapeOf(t reflect.Type) string {
	h := fnv.New64a()
	h.Write([]byte(t.String()))
	if t.Kind() == reflect.Struct {
		for i := range t.NumField() {
			f := t.Field(i)
			fmt.Fprintf(h, "\x00%s\x00%s\x00%s", f.Name, f.Type.String(), f.Tag)
		}
	}
	return strconv.FormatUint(h.Sum64(), 16)
}

// codecName returns a codec's name: what its Name method returns, if it
// has one, its Go type's name otherwise.
func codecName[T any](c Codec[T]) string {
	if n, ok := c.(interface{ Name() string }); ok {
		return n.Name()
	}
	return typeName(reflect.TypeOf(c))
}

// streamFieldsZero reports whether o sets nothing of the stream's
// configuration: NewTopic then opens an existing stream as it is.
func streamFieldsZero(o TopicOptions) bool {
	return o.MaxAge == 0 && o.MaxMsgs == 0 && o.MaxBytes == 0 && o.Storage == jetstream.FileStorage &&
		o.Replicas == 0 && o.Duplicates == 0
}

// differences lists how the configuration cfg of an existing stream
// differs from what o asks for, one entry per field: "MaxAge: 1h0m0s
// asked, 30m0s on the stream".
func differences(o TopicOptions, cfg jetstream.StreamConfig) []string {
	var out []string
	diff := func(field, asked, stream string) {
		if asked != stream {
			out = append(out, fmt.Sprintf("%s: %s asked, %s on the stream", field, asked, stream))
		}
	}
	age := func(d time.Duration) string {
		if d == 0 {
			return "no limit"
		}
		return d.String()
	}
	limit := func(n int64) string {
		if n <= 0 {
			return "no limit"
		}
		return strconv.FormatInt(n, 10)
	}
	diff("MaxAge", age(o.MaxAge), age(cfg.MaxAge))
	diff("MaxMsgs", limit(o.MaxMsgs), limit(cfg.MaxMsgs))
	diff("MaxBytes", limit(o.MaxBytes), limit(cfg.MaxBytes))
	diff("Storage", o.Storage.String(), cfg.Storage.String())
	diff("Replicas", strconv.Itoa(max(o.Replicas, 1)), strconv.Itoa(cfg.Replicas))
	if o.Duplicates != 0 {
		// A zero Duplicates is the server's default, which its limits may
		// shorten: whatever the stream got agrees with it.
		diff("Duplicates", o.Duplicates.String(), cfg.Duplicates.String())
	}
	return out
}

// openStream finds or makes the topic's stream: it creates it with cfg
// if it is missing, and otherwise checks that it holds this topic and
// that o agrees with its configuration, changing it to cfg only if o.Update
// asks for it. It reports whether the stream's configuration is cfg's
// (created or updated): otherwise the stream was opened as it is, and may
// not take batched publishes (see Topic.Publisher).
func (t *Topic[T]) openStream(ctx context.Context, o TopicOptions, cfg jetstream.StreamConfig) (jetstream.Stream, bool, error) {
	s, err := t.js.Stream(ctx, cfg.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		s, err = t.js.CreateStream(ctx, cfg)
		if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return s, true, err
		}
		s, err = t.js.Stream(ctx, cfg.Name) // made meanwhile, by another process
	}
	if err != nil {
		return nil, false, err
	}
	info := s.CachedInfo()
	if err := t.checkStream(info, o.Update); err != nil {
		return nil, false, err
	}
	if streamFieldsZero(o) && !o.Update {
		return s, false, nil // opened as it is
	}
	diffs := differences(o, info.Config)
	if !info.Config.AllowBatchPublish {
		diffs = append(diffs, "batched publishes (which publishers send): on asked, off on the stream")
	}
	if len(diffs) == 0 && (!o.Update || t.id.recordedIn(info.Config.Metadata)) {
		return s, true, nil
	}
	if !o.Update {
		return nil, false, fmt.Errorf("%w: stream %q: %s (open it with zero TopicOptions to take it as it is, or set TopicOptions.Update to change it)",
			ErrConfigDiffers, cfg.Name, strings.Join(diffs, "; "))
	}
	cfg.Metadata = mergeMetadata(info.Config.Metadata, cfg.Metadata)
	s, err = t.js.UpdateStream(ctx, cfg)
	return s, true, err
}

// mergeMetadata keeps a stream's metadata keys that herald does not set.
func mergeMetadata(old, mine map[string]string) map[string]string {
	out := make(map[string]string, len(old)+len(mine))
	for k, v := range old {
		out[k] = v
	}
	for k, v := range mine {
		out[k] = v
	}
	return out
}

// checkStream reports whether the stream described by info can carry this
// topic: it serves the topic's subject alone and records the topic's
// schema and codec. A stream that records nothing of what it carries
// (herald did not make it) is refused unless update, which records it: a
// topic of another type could open it as well, and decode its values as
// poison.
func (t *Topic[T]) checkStream(info *jetstream.StreamInfo, update bool) error {
	if info == nil {
		return fmt.Errorf("natsbridge: topic %q: no stream information", t.name)
	}
	if !slices.Equal(info.Config.Subjects, []string{t.name}) {
		return fmt.Errorf("%w: stream %q serves subjects %q, not topic %q", ErrNameConflict, info.Config.Name, info.Config.Subjects, t.name)
	}
	m := info.Config.Metadata
	if m[metaSchema] == "" && m[metaType] == "" && !update {
		return fmt.Errorf("%w: stream %q records no schema (herald did not make it), so any type would be taken for its values: set TopicOptions.Update to record schema %q in it",
			ErrTypeMismatch, info.Config.Name, t.id.schema)
	}
	return t.id.check(info.Config.Name, m)
}
