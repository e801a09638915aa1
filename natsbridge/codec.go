package natsbridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
)

// Codec turns values of T into message payloads and back. Watchers receive
// what Unmarshal returns: a copy, never the publisher's value.
//
// A codec's name is recorded in the topic's stream, and a process whose
// codec has another name is refused (ErrTypeMismatch), so that no value is
// decoded by a codec it was not written with. A codec names itself with a
// method Name() string ("json" for JSON); one without it is named by its Go
// type.
//
// A Codec must be safe for concurrent use. An error (or a panic) from
// Marshal is returned to the publisher wrapped in ErrCodec; one from
// Unmarshal makes the message a poison message, counted and logged by the
// watcher, which goes on with the next message. Log lines name only the
// Go type of a codec's error or panic value, never its text, which may
// quote the value; the error Publish returns keeps the text.
type Codec[T any] interface {
	Marshal(v T) ([]byte, error)
	Unmarshal(data []byte) (T, error)
}

// JSON returns a Codec that encodes with encoding/json.
func JSON[T any]() Codec[T] { return jsonCodec[T]{} }

type jsonCodec[T any] struct{}

// Name is the codec's name, recorded in the stream.
func (jsonCodec[T]) Name() string { return "json" }

func (jsonCodec[T]) Marshal(v T) ([]byte, error) { return json.Marshal(v) }

func (jsonCodec[T]) Unmarshal(data []byte) (T, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}

// codecError is what encode and decode return: the error a codec
// returned, or the value it panicked with. Its text holds theirs, which may
// quote the value (encoding/json's errors quote the payload): it is for
// the caller, never for a log line (see logText).
type codecError struct {
	op       string // "marshal" or "unmarshal"
	err      error  // what the codec returned, if it did not panic
	panicked any    // the value it panicked with, if it did
}

func (e *codecError) Error() string {
	if e.err != nil {
		return fmt.Sprintf("%v: %s: %v", ErrCodec, e.op, e.err)
	}
	return fmt.Sprintf("%v: %s panicked: %v", ErrCodec, e.op, e.panicked)
}

func (e *codecError) Unwrap() []error {
	if e.err != nil {
		return []error{ErrCodec, e.err}
	}
	return []error{ErrCodec}
}

// logText describes the failure without its text: what failed and the Go
// type of the codec's error or panic value.
func (e *codecError) logText() string {
	if e.err != nil {
		return fmt.Sprintf("%v: %s returned an error of type %T", ErrCodec, e.op, e.err)
	}
	return fmt.Sprintf("%v: %s panicked with a value of type %T", ErrCodec, e.op, e.panicked)
}

// errAttr is the "err" attribute of a log line: err itself, unless it is
// (or wraps) a codec's failure, whose text may carry the value: then
// logText, which carries none.
func errAttr(err error) slog.Attr {
	if ce, ok := errors.AsType[*codecError](err); ok {
		return slog.String("err", ce.logText())
	}
	return slog.Any("err", err)
}

// encode runs c.Marshal, turning a panic into an error. Every error it
// returns is a *codecError, which wraps ErrCodec.
func encode[T any](c Codec[T], v T) (data []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			data, err = nil, &codecError{op: "marshal", panicked: r}
		}
	}()
	data, err = c.Marshal(v)
	if err != nil {
		return nil, &codecError{op: "marshal", err: err}
	}
	return data, nil
}

// decode runs c.Unmarshal, turning a panic into an error. Every error it
// returns is a *codecError, which wraps ErrCodec.
func decode[T any](c Codec[T], data []byte) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			var zero T
			v, err = zero, &codecError{op: "unmarshal", panicked: r}
		}
	}()
	v, err = c.Unmarshal(data)
	if err != nil {
		var zero T
		return zero, &codecError{op: "unmarshal", err: err}
	}
	return v, nil
}
