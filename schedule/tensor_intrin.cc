// The registry of tensor intrinsics: the checks of an intrinsic's form at registration, and the
// shipped intrinsics of schedule/intrin/, registered when the registry is first used.
#include "kiln/schedule/tensor_intrin.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "intrin/intrinsics.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/structural.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

// Removes the init of every block: an intrinsic is the update of a reduction.
class InitDropper : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const Block* op) override {
    Stmt visited = IRMutator::visit(op);
    const auto* block = visited.as<Block>();
    if (!block->init.defined()) return visited;
    auto result = copy(block);
    result->init = nullptr;
    return result;
  }
};

// "[16, 4]".
std::string shape_text(const Buffer& buffer) {
  std::string out;
  for (const Expr& extent : buffer.shape) out += (out.empty() ? "" : ", ") + to_script(extent);
  return "[" + out + "]";
}

// The root block of a function, or a kValue error.
const Block* root_block(const PrimFunc& func, const std::string& name, const char* role) {
  const auto* realize = func.body.as<BlockRealize>();
  user_check(realize != nullptr)
      << "TensorIntrin.register: the " << role << " of intrinsic '" << name
      << "' must have a root block as its body (as te.create_prim_func makes), found a "
      << kind_name(func.body->kind());
  return realize->block.get();
}

void check_form(const std::string& name, const PrimFunc& desc, const PrimFunc& impl) {
  const char* api = "TensorIntrin.register";
  user_check(desc.params.size() == impl.params.size())
      << api << ": the description of intrinsic '" << name << "' takes " << desc.params.size()
      << " parameters and the implementation " << impl.params.size()
      << "; both must take the same buffers in the same order";
  for (size_t k = 0; k < desc.params.size(); ++k) {
    Ref<Buffer> d = desc.buffer_of(desc.params[k]);
    Ref<Buffer> i = impl.buffer_of(impl.params[k]);
    user_check(d.defined() && i.defined())
        << api << ": parameter " << k << " of intrinsic '" << name
        << "' is a scalar; an intrinsic takes buffers only";
    bool same_shape = d->ndim() == i->ndim();
    for (int dim = 0; same_shape && dim < d->ndim(); ++dim) {
      const int64_t* a = as_const_int(d->shape[dim]);
      const int64_t* b = as_const_int(i->shape[dim]);
      user_check(a != nullptr && b != nullptr)
          << api << ": buffer " << d->name << " of intrinsic '" << name
          << "' has a symbolic shape; an intrinsic's buffers have constant shapes";
      same_shape = *a == *b;
    }
    user_check(same_shape && d->dtype == i->dtype)
        << api << ": parameter " << k << " of intrinsic '" << name << "' is " << d->name
        << shape_text(*d) << " (" << d->dtype << ") in the description but " << i->name
        << shape_text(*i) << " (" << i->dtype
        << ") in the implementation; shapes and dtypes must agree";
  }
  // The description: loops around exactly one block.
  const Block* root = root_block(desc, name, "description");
  Stmt s = root->body;
  while (const auto* loop = s.as<For>()) s = loop->body;
  const auto* realize = s.as<BlockRealize>();
  user_check(realize != nullptr && realize->block->body.defined())
      << api << ": the description of intrinsic '" << name
      << "' must be a nest of loops around one block, found a " << kind_name(s->kind())
      << " under its loops";
  root_block(impl, name, "implementation");
}

struct Registry {
  std::mutex mutex;
  std::map<std::string, TensorIntrin> intrinsics;
};

void add(Registry& registry, const std::string& name, const Ref<PrimFunc>& desc,
         const Ref<PrimFunc>& impl, bool override, std::vector<std::string> features) {
  user_check(desc.defined() && impl.defined())
      << "TensorIntrin.register: intrinsic '" << name << "' needs a description and an "
      << "implementation PrimFunc";
  check_form(name, *desc, *impl);
  user_check(override || registry.intrinsics.count(name) == 0)
      << "TensorIntrin.register: an intrinsic named '" << name
      << "' is already registered (pass override=True to replace it)";
  InitDropper dropper;
  auto d = copy(desc.get());
  d->body = dropper.mutate(desc->body);
  auto i = copy(impl.get());
  i->body = dropper.mutate(impl->body);
  for (const std::string& feature : features) {
    user_check(!feature.empty() && feature[0] != '+' && feature[0] != '-')
        << "TensorIntrin.register: intrinsic '" << name << "' declares the feature '" << feature
        << "'; give feature names without a sign, as targets list them (e.g. \"avx512vnni\")";
  }
  std::sort(features.begin(), features.end());
  features.erase(std::unique(features.begin(), features.end()), features.end());
  registry.intrinsics[name] = TensorIntrin{name, d, i, std::move(features)};
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

Registry& registry() {
  static Registry* instance = [] {
    auto* r = new Registry();
    auto shipped = [r](const std::string& name, const Ref<PrimFunc>& desc,
                       const Ref<PrimFunc>& impl, const std::vector<std::string>& features) {
      add(*r, name, desc, impl, false, features);
    };
    register_x86_avx512_vnni_intrinsics(shipped);
    register_x86_avxvnni_intrinsics(shipped);
    register_x86_avx512_bf16_intrinsics(shipped);
    register_cuda_mma_intrinsics(shipped);
    register_cuda_mma_reference_intrinsics(shipped);
    return r;
  }();
  return *instance;
}

}  // namespace

std::string target_features_text(const IntrinTarget& target) {
  if (target.features.empty()) return "it has no such features";
  return "its features: " + join(target.features);
}

void register_tensor_intrin(const std::string& name, const Ref<PrimFunc>& desc,
                            const Ref<PrimFunc>& impl, bool override,
                            std::vector<std::string> required_features) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  add(r, name, desc, impl, override, std::move(required_features));
}

std::vector<std::string> missing_features(const TensorIntrin& intrin, const IntrinTarget& target) {
  std::vector<std::string> missing;
  for (const std::string& feature : intrin.required_features) {
    if (std::find(target.features.begin(), target.features.end(), feature) ==
        target.features.end()) {
      missing.push_back(feature);
    }
  }
  return missing;
}

void check_tensor_intrin_features(const PrimFunc& func, const std::string& func_name,
                                  const IntrinTarget& target, const char* api) {
  post_order_visit(
      func.body, [&](const Node* node) {
        if (node->kind() != NodeKind::Block) return;
        const auto* block = static_cast<const Block*>(node);
        auto it = block->annotations.find(kTensorIntrinAnnotation);
        if (it == block->annotations.end()) return;
        const auto* name = it->second.as<StringImm>();
        if (name == nullptr) return;
        TensorIntrin intrin = get_tensor_intrin(name->value);
        std::vector<std::string> missing = missing_features(intrin, target);
        user_check(missing.empty())
            << api << ": function " << func_name << " uses the tensor intrinsic '" << intrin.name
            << "' (block '" << block->name << "'), which needs the target features "
            << join(intrin.required_features) << "; the target '" << target.name << "' lacks "
            << join(missing) << " (" << target_features_text(target)
            << "). Build for a target that has them (such a module can be exported and run on a "
               "machine that has them), or schedule without the intrinsic";
      });
}

TensorIntrin get_tensor_intrin(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.intrinsics.find(name);
  if (it == r.intrinsics.end()) {
    std::string names;
    for (const auto& [n, intrin] : r.intrinsics) names += (names.empty() ? "" : ", ") + n;
    user_error(ErrorKind::kValue) << "TensorIntrin.get: no tensor intrinsic is named '" << name
                                  << "'; registered: " << names;
  }
  return it->second;
}

std::vector<std::string> tensor_intrin_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& [n, intrin] : r.intrinsics) names.push_back(n);
  return names;
}

}  // namespace kiln::schedule
