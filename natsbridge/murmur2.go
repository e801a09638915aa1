package natsbridge

// Murmur2 returns the 32-bit murmur2 hash of key as Kafka computes it
// (org.apache.kafka.common.utils.Utils.murmur2: seed 0x9747b28c), as a
// signed integer. A partitioned topic routes a value to partition
// (Murmur2(key) & 0x7fffffff) % P, as Kafka's default partitioner does
// with a record's key, so that a producer in any language with Kafka's
// murmur2 routes alike (see Partitioned.Partition).
func Murmur2(key []byte) int32 {
	const (
		seed = 0x9747b28c
		m    = 0x5bd1e995
		r    = 24
	)
	n := len(key)
	h := uint32(seed) ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := uint32(key[i]) | uint32(key[i+1])<<8 | uint32(key[i+2])<<16 | uint32(key[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := key[n&^3:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// partitionOf returns the partition of key among p: Kafka's default
// partitioner's.
func partitionOf(key string, p int) int {
	return int(uint32(Murmur2([]byte(key)))&0x7fffffff) % p
}
