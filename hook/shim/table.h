/*
 * The shim's size table, header-only so its probes inline into the
 * allocation and free wrappers. Included by migpro_shim.c only.
 */
#ifndef MIGPRO_SHIM_TABLE_H
#define MIGPRO_SHIM_TABLE_H

/* ---- size table ---------------------------------------------------------
 * Free calls carry only the pointer, so the size of every live allocation is
 * kept here. Open addressing with linear probing over a static array: no
 * malloc, no lock. A slot's key is claimed by CAS; EMPTY ends a probe, TOMB
 * (a freed slot) does not, and is reused by later inserts. Probes are bounded,
 * so a full table costs a bounded scan and the allocation is merely left
 * out (its free then asks the driver for the size). The array is
 * BSS: untouched pages cost nothing in processes that never allocate. */
#define KEY_EMPTY 0ull
#define KEY_TOMB 1ull /* neither is ever a device pointer or handle */
#define MAX_PROBE 64

struct slot {
	unsigned long long key;
	unsigned long long size;
};

#define PTR_BITS 16
#define HANDLE_BITS 12
static struct slot ptr_tbl[1u << PTR_BITS];
static struct slot handle_tbl[1u << HANDLE_BITS];

static inline unsigned slot_of(unsigned long long key, unsigned bits)
{
	return (unsigned)(((key >> 8) * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

static int tbl_put(struct slot *t, unsigned bits, unsigned long long key, unsigned long long size)
{
	unsigned mask = (1u << bits) - 1, h = slot_of(key, bits);
	for (unsigned i = 0; i < MAX_PROBE; i++) {
		struct slot *s = &t[(h + i) & mask];
		unsigned long long k = LOAD(&s->key);
		if (k != KEY_EMPTY && k != KEY_TOMB)
			continue;
		/* Size first: a reader only looks for this key after the
		 * allocation returned, but keep the pair consistent anyway. */
		if (CAS(&s->key, &k, key)) {
			__atomic_store_n(&s->size, size, __ATOMIC_RELEASE);
			return 1;
		}
	}
	return 0;
}

static int tbl_take(struct slot *t, unsigned bits, unsigned long long key, unsigned long long *size)
{
	unsigned mask = (1u << bits) - 1, h = slot_of(key, bits);
	if (key == KEY_EMPTY || key == KEY_TOMB)
		return 0;
	for (unsigned i = 0; i < MAX_PROBE; i++) {
		struct slot *s = &t[(h + i) & mask];
		unsigned long long k = LOAD(&s->key);
		if (k == KEY_EMPTY)
			return 0;
		if (k != key)
			continue;
		*size = __atomic_load_n(&s->size, __ATOMIC_ACQUIRE);
		/* A plain store, not a CAS: only the thread freeing this live
		 * pointer gets here (two racing frees of one pointer are a
		 * program bug the driver rejects anyway), and a locked
		 * instruction is a measurable part of the per-call cost. */
		__atomic_store_n(&s->key, KEY_TOMB, __ATOMIC_RELEASE);
		return 1;
	}
	return 0;
}

#endif
