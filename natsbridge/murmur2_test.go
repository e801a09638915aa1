package natsbridge_test

import (
	"testing"

	"github.com/heraldgo/herald/natsbridge"
)

// TestMurmur2MatchesKafka checks Murmur2 against the values of Kafka's own
// tests of Utils.murmur2, so that programs in other languages route keys
// to the same partitions.
func TestMurmur2MatchesKafka(t *testing.T) {
	tests := []struct {
		key  string
		want int32
	}{
		{"21", -973932308},
		{"foobar", -790332482},
		{"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107},
		{"1", -1993445489},
		{"12", 126087238},
		{"123", -267702483},
		{"1234", -1614185708},
		{"12345", -1188365604},
	}
	for _, tc := range tests {
		if got := natsbridge.Murmur2([]byte(tc.key)); got != tc.want {
			t.Errorf("Murmur2(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
}
