// jx::distributed (include/jx/distributed.h): the public face of distributed/mpi.h.
#include "jx/distributed.h"

#include "distributed/mpi.h"

namespace jx::distributed {

void initialize(const InitializeOptions& options) {
  detail::mpi::initialize(options.num_processes, options.process_id);
}
bool is_initialized() { return detail::mpi::process_group().initialized; }
void shutdown() { detail::mpi::shutdown(); }

}  // namespace jx::distributed
