package natsbridge

import (
	"encoding/json"
	"fmt"
)

// Codec turns values of T into message payloads and back. Watchers receive
// what Unmarshal returns: a copy, never the publisher's value.
//
// A Codec must be safe for concurrent use. An error (or a panic) from
// Marshal is returned to the publisher wrapped in ErrCodec; one from
// Unmarshal makes the message a poison message, counted and logged by the
// watcher, which goes on with the next message.
type Codec[T any] interface {
	Marshal(v T) ([]byte, error)
	Unmarshal(data []byte) (T, error)
}

// JSON returns a Codec that encodes with encoding/json.
func JSON[T any]() Codec[T] { return jsonCodec[T]{} }

type jsonCodec[T any] struct{}

func (jsonCodec[T]) Marshal(v T) ([]byte, error) { return json.Marshal(v) }

func (jsonCodec[T]) Unmarshal(data []byte) (T, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}

// encode runs c.Marshal, turning a panic into an error. Every error it
// returns wraps ErrCodec.
func encode[T any](c Codec[T], v T) (data []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: marshal panicked: %v", ErrCodec, r)
		}
	}()
	data, err = c.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: marshal: %w", ErrCodec, err)
	}
	return data, nil
}

// decode runs c.Unmarshal, turning a panic into an error. Every error it
// returns wraps ErrCodec.
func decode[T any](c Codec[T], data []byte) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			var zero T
			v, err = zero, fmt.Errorf("%w: unmarshal panicked: %v", ErrCodec, r)
		}
	}()
	v, err = c.Unmarshal(data)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("%w: unmarshal: %w", ErrCodec, err)
	}
	return v, nil
}
