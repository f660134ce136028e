// The shared-memory transport: the members of a group are threads of this process (the
// devices along one mesh axis). A collective is two barriers around direct reads and
// writes of each other's buffers: every member publishes its buffers, then computes its
// 1/size share of the result for everyone, then waits until nobody reads its input.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "distributed/communicator.h"

namespace jx::detail {

class SharedMemoryGroup : public std::enable_shared_from_this<SharedMemoryGroup> {
 public:
  // member_names[m] is how errors name member m ("cpu:2").
  static std::shared_ptr<SharedMemoryGroup> create(std::vector<std::string> member_names, double timeout_s);
  virtual ~SharedMemoryGroup() = default;
  virtual int size() const = 0;
  // The handle member `rank` uses (the handle keeps the group alive).
  virtual std::unique_ptr<Communicator> member(int rank) = 0;
  // Wakes every member waiting in (or later entering) a collective of this group; they
  // raise "[<collective>] over axis '<axis>': abandoned because <reason>". The group is
  // broken from then on.
  virtual void abort(const std::string& reason) = 0;
};

}  // namespace jx::detail
