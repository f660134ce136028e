// One thread per device, as a GPU has a stream: pmap and shard_map hand each device its
// share of a program and wait for all of them. The shares run at once (collectives
// wait for every member), each kernel inside them using the shared thread pool.
#pragma once

#include <exception>
#include <functional>
#include <span>
#include <vector>

#include "jx/device.h"

namespace jx::detail {

// Runs task(k) on the thread of devices[k] for every k, concurrently, and waits for all.
// Returns each task's exception (null when it returned). `on_failure` is called (from
// the failing device's thread) as soon as one task throws, so the others can be woken
// from a collective that now cannot complete.
std::vector<std::exception_ptr> run_on_devices(std::span<const Device> devices,
                                               const std::function<void(size_t)>& task,
                                               const std::function<void(size_t, const std::exception_ptr&)>& on_failure);

}  // namespace jx::detail
