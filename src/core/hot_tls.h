// The TLS model of the thread-locals every op's dispatch reads.
#pragma once

// Thread-locals on the dispatch path of every op (the current trace, the device scope,
// the allocation label, the axis environment) take the initial-exec TLS model: a read is
// one load at a fixed offset from the thread pointer, where a shared library's default
// (general-dynamic) calls __tls_get_addr on each access. That call was 6% of a cached
// jitted 1-element add (1.28 us on the 2-core Zen 1); with the model, the jitted add took
// 1.25-1.27 us against 1.29-1.32, eager's 1.17-1.18 against 1.22-1.23. The model takes
// static TLS space, which a libjx loaded by dlopen draws from glibc's small reserve
// shared by all such libraries, so only small variables carry it (about 140 bytes:
// pointers, flags, a placement and two vector headers), never a cache or a buffer.
#define JX_INITIAL_EXEC_TLS [[gnu::tls_model("initial-exec")]]
