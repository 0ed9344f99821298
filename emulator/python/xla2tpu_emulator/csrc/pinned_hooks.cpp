// The emulator's PrivateUse1 hooks, with the pinned host allocator TorchTPU's
// own hooks have (torch_tpu::TpuHooksInterface::getPinnedMemoryAllocator in the
// 0.2.0 wheel). torch's C++ code asks the hooks for it: DDP's reducer with
// find_unused_parameters=True, torch.empty(..., pin_memory=True). A Python
// backend's hooks (torch._C._acc.PrivateUse1Hooks) cannot provide it, and the
// hooks can be registered only once, so these replace them: is_available and
// is_built are true, has_primary_context asks the emulator (a callback).
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <cstring>
#include <mutex>
#include <unordered_set>

namespace {

std::mutex mu;
std::unordered_set<const void*> pinned;  // what isPinnedPtr answers for

void free_pinned(void* ptr) {
  {
    std::lock_guard<std::mutex> lock(mu);
    pinned.erase(ptr);
  }
  c10::free_cpu(ptr);
}

// Host memory the chip would read by DMA: on a CPU, plain host memory that
// remembers it was allocated as pinned.
struct PinnedAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    void* p = n ? c10::alloc_cpu(n) : nullptr;
    if (p) {
      std::lock_guard<std::mutex> lock(mu);
      pinned.insert(p);
    }
    return {p, p, &free_pinned, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_pinned; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

PinnedAllocator allocator;

using HasPrimaryContext = int (*)(int);

struct Hooks final : at::PrivateUse1HooksInterface {
  explicit Hooks(HasPrimaryContext primary) : primary(primary) {}
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex index) const override { return primary(index) != 0; }
  bool isPinnedPtr(const void* data) const override {
    std::lock_guard<std::mutex> lock(mu);
    return pinned.count(data) > 0;
  }
  at::Allocator* getPinnedMemoryAllocator() const override { return &allocator; }
  HasPrimaryContext primary;
};

}  // namespace

// 0 when registered; 1 when some hooks already were (nothing changed).
extern "C" int xla2tpu_register_hooks(HasPrimaryContext primary) {
  if (at::isPrivateUse1HooksRegistered()) return 1;
  static Hooks hooks(primary);
  at::RegisterPrivateUse1HooksInterface(&hooks);
  return 0;
}
