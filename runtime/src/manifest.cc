// Reads a module manifest from JSON and decides whether this runtime can run the module. Every
// malformed field is reported with its place in the manifest ("functions[0].args[1].dtype").
#include "manifest.h"

#include "cpu_features.h"
#include "dtype.h"
#include "json.h"

namespace kiln {
namespace runtime {
namespace {

bool decode_base64(std::string* text);

class ManifestReader {
 public:
  explicit ManifestReader(std::string* error) : error_(error) {}

  bool read(const JsonValue& root, Manifest* out) {
    if (root.kind != JsonValue::Kind::kObject) return fail_at("", "expected an object", root);
    const JsonValue* abi = root.find("abi_version");
    if (abi == nullptr) return missing("", "abi_version");
    if (!read_integer(*abi, "abi_version", &out->abi_version)) return false;
    const JsonValue* target = root.find("target");
    if (target == nullptr) return missing("", "target");
    if (!read_string(*target, "target", &out->target)) return false;
    if (const JsonValue* features = root.find("host_features")) {
      if (!read_string_array(*features, "host_features", &out->host_features)) return false;
    }
    const JsonValue* functions = root.find("functions");
    if (functions == nullptr) return missing("", "functions");
    if (functions->kind != JsonValue::Kind::kArray) {
      return fail_at("functions", "expected an array", *functions);
    }
    for (size_t i = 0; i < functions->array.size(); ++i) {
      out->functions.emplace_back();
      std::string where = "functions[" + std::to_string(i) + "]";
      if (!read_function(functions->array[i], where, &out->functions.back())) return false;
      for (size_t j = 0; j < i; ++j) {
        if (out->functions[j].name == out->functions.back().name) {
          return fail(where + ".name: function '" + out->functions[j].name + "' is defined twice");
        }
      }
    }
    if (const JsonValue* blobs = root.find("device_blobs")) {
      if (!read_device_blobs(*blobs, out)) return false;
    }
    if (const JsonValue* kernels = root.find("device_kernels")) {
      if (!read_device_kernels(*kernels, out)) return false;
    }
    return true;
  }

 private:
  bool fail(const std::string& message) {
    *error_ = message;
    return false;
  }

  bool fail_at(const std::string& where, const std::string& expected, const JsonValue& found) {
    return fail((where.empty() ? "" : where + ": ") + expected + ", found " +
                json_kind_name(found.kind));
  }

  bool missing(const std::string& where, const std::string& key) {
    return fail((where.empty() ? "" : where + ": ") + "missing key \"" + key + "\"");
  }

  bool read_integer(const JsonValue& value, const std::string& where, int64_t* out) {
    if (value.kind != JsonValue::Kind::kNumber || !value.is_integer) {
      return fail_at(where, "expected an integer", value);
    }
    *out = value.integer;
    return true;
  }

  bool read_string(const JsonValue& value, const std::string& where, std::string* out) {
    if (value.kind != JsonValue::Kind::kString) return fail_at(where, "expected a string", value);
    *out = value.string;
    return true;
  }

  bool read_string_array(const JsonValue& value, const std::string& where,
                         std::vector<std::string>* out) {
    if (value.kind != JsonValue::Kind::kArray) return fail_at(where, "expected an array", value);
    for (size_t i = 0; i < value.array.size(); ++i) {
      out->emplace_back();
      if (!read_string(value.array[i], where + "[" + std::to_string(i) + "]", &out->back())) {
        return false;
      }
    }
    return true;
  }

  // Reads a shape or strides array: integers (>= 0 for shapes) or names of sym_vars.
  bool read_extents(const JsonValue& value, const std::string& where, bool is_shape,
                    const FunctionSpec& function, std::vector<int64_t>* out) {
    if (value.kind != JsonValue::Kind::kArray) return fail_at(where, "expected an array", value);
    for (size_t i = 0; i < value.array.size(); ++i) {
      const JsonValue& entry = value.array[i];
      std::string at = where + "[" + std::to_string(i) + "]";
      if (entry.kind == JsonValue::Kind::kString) {
        int64_t index = -1;
        for (size_t k = 0; k < function.sym_var_names.size(); ++k) {
          if (function.sym_var_names[k] == entry.string) index = static_cast<int64_t>(k);
        }
        if (index < 0) {
          return fail(at + ": '" + entry.string + "' is not one of the function's sym_vars");
        }
        out->push_back(-(index + 1));
      } else if (entry.kind == JsonValue::Kind::kNumber && entry.is_integer) {
        if (entry.integer < 0) {
          return fail(at + ": expected " + (is_shape ? "an extent" : "a stride") + " >= 0, found " +
                      std::to_string(entry.integer));
        }
        out->push_back(entry.integer);
      } else {
        return fail_at(at, "expected an integer or a sym_var name", entry);
      }
    }
    return true;
  }

  bool read_arg(const JsonValue& value, const std::string& where, FunctionSpec* function,
                KilnArgSpec* arg) {
    if (value.kind != JsonValue::Kind::kObject) return fail_at(where, "expected an object", value);
    *arg = KilnArgSpec{};
    const JsonValue* name = value.find("name");
    if (name == nullptr) return missing(where, "name");
    function->arg_names.emplace_back();
    if (!read_string(*name, where + ".name", &function->arg_names.back())) return false;
    arg->name = function->arg_names.back().c_str();

    const JsonValue* kind = value.find("kind");
    if (kind == nullptr) return missing(where, "kind");
    std::string kind_name;
    if (!read_string(*kind, where + ".kind", &kind_name)) return false;
    if (kind_name == "tensor") {
      arg->kind = kKilnArgTensor;
    } else if (kind_name == "scalar") {
      arg->kind = kKilnArgScalar;
    } else {
      return fail(where + ".kind: expected \"tensor\" or \"scalar\", found \"" + kind_name + "\"");
    }

    const JsonValue* dtype = value.find("dtype");
    if (dtype == nullptr) return missing(where, "dtype");
    std::string dtype_text;
    if (!read_string(*dtype, where + ".dtype", &dtype_text)) return false;
    if (!parse_dtype(dtype_text, &arg->dtype)) {
      return fail(where + ".dtype: unknown dtype '" + dtype_text + "'");
    }
    arg->device_type = kDLCPU;
    arg->alignment = 1;
    arg->streaming_alignment = 0;
    if (arg->kind == kKilnArgScalar) {
      if (arg->dtype.lanes != 1) return fail(where + ".dtype: a scalar must have one lane");
      return true;
    }

    const JsonValue* shape = value.find("shape");
    if (shape == nullptr) return missing(where, "shape");
    function->shapes.emplace_back();
    if (!read_extents(*shape, where + ".shape", true, *function, &function->shapes.back())) {
      return false;
    }
    arg->shape = function->shapes.back().data();
    arg->ndim = static_cast<int32_t>(function->shapes.back().size());
    if (const JsonValue* ndim = value.find("ndim")) {
      int64_t declared;
      if (!read_integer(*ndim, where + ".ndim", &declared)) return false;
      if (declared != arg->ndim) {
        return fail(where + ".ndim: " + std::to_string(declared) + " does not match the shape's " +
                    std::to_string(arg->ndim) + " entries");
      }
    }
    const JsonValue* strides = value.find("strides");
    if (strides != nullptr && strides->kind != JsonValue::Kind::kNull) {
      function->strides.emplace_back();
      if (!read_extents(*strides, where + ".strides", false, *function,
                        &function->strides.back())) {
        return false;
      }
      if (static_cast<int32_t>(function->strides.back().size()) != arg->ndim) {
        return fail(where + ".strides: expected " + std::to_string(arg->ndim) +
                    " entries like the shape, found " +
                    std::to_string(function->strides.back().size()));
      }
      arg->strides = function->strides.back().data();
    }
    if (const JsonValue* device = value.find("device")) {
      std::string device_name;
      if (!read_string(*device, where + ".device", &device_name)) return false;
      if (!parse_device_type(device_name, &arg->device_type)) {
        return fail(where + ".device: unknown device '" + device_name + "'");
      }
    }
    arg->written = 1;  // a manifest that does not say is taken to write every tensor
    if (const JsonValue* written = value.find("written")) {
      if (written->kind != JsonValue::Kind::kBool) {
        return fail_at(where + ".written", "expected true or false", *written);
      }
      arg->written = written->boolean ? 1 : 0;
    }
    if (const JsonValue* alignment = value.find("alignment")) {
      int64_t bytes;
      if (!read_integer(*alignment, where + ".alignment", &bytes)) return false;
      if (bytes < 1 || bytes > (1 << 30) || (bytes & (bytes - 1)) != 0) {
        return fail(where + ".alignment: expected a power of two, found " + std::to_string(bytes));
      }
      arg->alignment = static_cast<int32_t>(bytes);
    }
    if (const JsonValue* streaming = value.find("streaming_alignment")) {
      int64_t bytes;
      if (!read_integer(*streaming, where + ".streaming_alignment", &bytes)) return false;
      if (bytes < 1 || bytes > (1 << 30) || (bytes & (bytes - 1)) != 0) {
        return fail(where + ".streaming_alignment: expected a power of two, found " +
                    std::to_string(bytes));
      }
      arg->streaming_alignment = static_cast<int32_t>(bytes);
    }
    return true;
  }

  bool read_function(const JsonValue& value, const std::string& where, FunctionSpec* function) {
    if (value.kind != JsonValue::Kind::kObject) return fail_at(where, "expected an object", value);
    const JsonValue* name = value.find("name");
    if (name == nullptr) return missing(where, "name");
    if (!read_string(*name, where + ".name", &function->name)) return false;
    const JsonValue* symbol = value.find("symbol");
    if (symbol == nullptr) return missing(where, "symbol");
    if (!read_string(*symbol, where + ".symbol", &function->symbol)) return false;
    if (const JsonValue* sym_vars = value.find("sym_vars")) {
      if (!read_string_array(*sym_vars, where + ".sym_vars", &function->sym_var_names)) {
        return false;
      }
    }
    if (!read_sym_var_dtypes(value, where, function)) return false;
    if (!read_sym_var_max(value, where, function)) return false;
    const JsonValue* args = value.find("args");
    if (args == nullptr) return missing(where, "args");
    if (args->kind != JsonValue::Kind::kArray) {
      return fail_at(where + ".args", "expected an array", *args);
    }
    function->args.resize(args->array.size());
    for (size_t i = 0; i < args->array.size(); ++i) {
      std::string at = where + ".args[" + std::to_string(i) + "]";
      if (!read_arg(args->array[i], at, function, &function->args[i])) return false;
    }
    for (const std::string& sym_var : function->sym_var_names) {
      function->sym_var_pointers.push_back(sym_var.c_str());
    }
    KilnFuncSpec& spec = function->spec;
    spec.name = function->name.c_str();
    spec.symbol = function->symbol.c_str();
    spec.num_args = static_cast<int32_t>(function->args.size());
    spec.args = function->args.data();
    spec.num_sym_vars = static_cast<int32_t>(function->sym_var_names.size());
    spec.sym_var_names = function->sym_var_pointers.data();
    spec.sym_var_dtypes = function->sym_var_dtypes.data();
    spec.sym_var_max = function->sym_var_max.data();
    return true;
  }

  // "sym_var_max": per sym_var, the largest value the function supports or null (none beyond
  // its dtype's); no limits when absent.
  bool read_sym_var_max(const JsonValue& value, const std::string& where, FunctionSpec* function) {
    size_t count = function->sym_var_names.size();
    function->sym_var_max.assign(count, INT64_MAX);
    const JsonValue* limits = value.find("sym_var_max");
    if (limits == nullptr) return true;
    if (limits->kind != JsonValue::Kind::kArray || limits->array.size() != count) {
      return fail_at(where + ".sym_var_max",
                     "expected an array of " + std::to_string(count) +
                         " entries (an integer or null per sym_var)",
                     *limits);
    }
    for (size_t k = 0; k < count; ++k) {
      const JsonValue& entry = limits->array[k];
      if (entry.kind == JsonValue::Kind::kNull) continue;
      std::string at = where + ".sym_var_max[" + std::to_string(k) + "]";
      if (!read_integer(entry, at, &function->sym_var_max[k])) return false;
    }
    return true;
  }

  // "sym_var_dtypes": one integer dtype per sym_var; int64 for each when absent.
  bool read_sym_var_dtypes(const JsonValue& value, const std::string& where,
                           FunctionSpec* function) {
    size_t count = function->sym_var_names.size();
    const JsonValue* dtypes = value.find("sym_var_dtypes");
    if (dtypes == nullptr) {
      function->sym_var_dtypes.assign(count, DLDataType{kDLInt, 64, 1});
      return true;
    }
    std::vector<std::string> names;
    if (!read_string_array(*dtypes, where + ".sym_var_dtypes", &names)) return false;
    if (names.size() != count) {
      return fail(where + ".sym_var_dtypes: expected " + std::to_string(count) +
                  " entries, one per sym_var, found " + std::to_string(names.size()));
    }
    for (size_t k = 0; k < count; ++k) {
      DLDataType dtype;
      bool integer = parse_dtype(names[k], &dtype) && dtype.lanes == 1 &&
                     (dtype.code == kDLInt || dtype.code == kDLUInt) && dtype.bits <= 64;
      if (!integer) {
        return fail(where + ".sym_var_dtypes[" + std::to_string(k) +
                    "]: expected an integer dtype (int32, int64 ...), found '" + names[k] + "'");
      }
      function->sym_var_dtypes.push_back(dtype);
    }
    return true;
  }

  // Reads the blobs; the payload ("text" or "base64") of a kind and format this runtime does not
  // load is left unread, for check_manifest_runnable to refuse by name.
  bool read_device_blobs(const JsonValue& value, Manifest* out) {
    if (value.kind != JsonValue::Kind::kArray) {
      return fail_at("device_blobs", "expected an array", value);
    }
    for (size_t i = 0; i < value.array.size(); ++i) {
      const JsonValue& entry = value.array[i];
      std::string where = "device_blobs[" + std::to_string(i) + "]";
      if (entry.kind != JsonValue::Kind::kObject) {
        return fail_at(where, "expected an object", entry);
      }
      out->device_blobs.emplace_back();
      DeviceBlob& blob = out->device_blobs.back();
      const JsonValue* kind = entry.find("kind");
      if (kind == nullptr) return missing(where, "kind");
      if (!read_string(*kind, where + ".kind", &blob.kind)) return false;
      const JsonValue* format = entry.find("format");
      if (format == nullptr) return missing(where, "format");
      if (!read_string(*format, where + ".format", &blob.format)) return false;
      if (const JsonValue* arch = entry.find("arch")) {
        if (!read_string(*arch, where + ".arch", &blob.arch)) return false;
      }
      if (const JsonValue* options = entry.find("build_options")) {
        if (!read_string(*options, where + ".build_options", &blob.build_options)) return false;
      }
      bool text = (blob.kind == "opencl" && blob.format == "cl") ||
                  (blob.kind == "cuda" && blob.format == "ptx");
      bool binary = blob.kind == "cuda" && blob.format == "cubin";
      if (binary && blob.arch.empty()) return missing(where, "arch");
      if (text || binary) {
        const char* key = text ? "text" : "base64";
        const JsonValue* payload = entry.find(key);
        if (payload == nullptr) return missing(where, key);
        std::string at = where + "." + key;
        if (!read_string(*payload, at, &blob.data)) return false;
        if (binary && !decode_base64(&blob.data)) return fail(at + ": invalid base64");
      }
    }
    return true;
  }

  bool read_device_kernels(const JsonValue& value, Manifest* out) {
    if (value.kind != JsonValue::Kind::kArray) {
      return fail_at("device_kernels", "expected an array", value);
    }
    for (size_t i = 0; i < value.array.size(); ++i) {
      const JsonValue& entry = value.array[i];
      std::string where = "device_kernels[" + std::to_string(i) + "]";
      if (entry.kind != JsonValue::Kind::kObject) {
        return fail_at(where, "expected an object", entry);
      }
      DeviceKernel kernel;
      const JsonValue* name = entry.find("name");
      if (name == nullptr) return missing(where, "name");
      if (!read_string(*name, where + ".name", &kernel.name)) return false;
      const JsonValue* num_args = entry.find("num_args");
      if (num_args == nullptr) return missing(where, "num_args");
      int64_t count = 0;
      if (!read_integer(*num_args, where + ".num_args", &count)) return false;
      if (count < 0 || count > 65535) {
        return fail(where + ".num_args: expected 0 to 65535, found " + std::to_string(count));
      }
      kernel.num_args = static_cast<int32_t>(count);
      out->device_kernels.push_back(kernel);
    }
    return true;
  }

  std::string* error_;
};

// Decodes standard base64 (RFC 4648, '=' padding optional, whitespace ignored) in place.
// Returns false on any other character.
bool decode_base64(std::string* text) {
  std::string out;
  out.reserve(text->size() / 4 * 3);
  uint32_t bits = 0;
  int count = 0;
  bool padding = false;
  for (char c : *text) {
    int value;
    if (c >= 'A' && c <= 'Z') {
      value = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      value = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      value = c - '0' + 52;
    } else if (c == '+') {
      value = 62;
    } else if (c == '/') {
      value = 63;
    } else if (c == '=') {
      padding = true;
      continue;
    } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      continue;
    } else {
      return false;
    }
    if (padding) return false;  // data after '='
    bits = (bits << 6) | static_cast<uint32_t>(value);
    if (++count == 4) {
      out.push_back(static_cast<char>((bits >> 16) & 0xff));
      out.push_back(static_cast<char>((bits >> 8) & 0xff));
      out.push_back(static_cast<char>(bits & 0xff));
      bits = 0;
      count = 0;
    }
  }
  if (count == 1) return false;
  if (count == 2) out.push_back(static_cast<char>((bits >> 4) & 0xff));
  if (count == 3) {
    out.push_back(static_cast<char>((bits >> 10) & 0xff));
    out.push_back(static_cast<char>((bits >> 2) & 0xff));
  }
  text->swap(out);
  return true;
}

// Splits a target string into whitespace-separated words.
std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t start = text.find_first_not_of(" \t", pos);
    if (start == std::string::npos) break;
    size_t end = text.find_first_of(" \t", start);
    if (end == std::string::npos) end = text.size();
    words.push_back(text.substr(start, end - start));
    pos = end;
  }
  return words;
}

}  // namespace

bool parse_manifest(const char* json, Manifest* out, std::string* error) {
  JsonValue root;
  std::string json_error;
  if (!parse_json(json, &root, &json_error)) {
    *error = "invalid JSON: " + json_error;
    return false;
  }
  ManifestReader reader(error);
  return reader.read(root, out);
}

std::string check_manifest_runnable(const Manifest& manifest) {
  if (manifest.abi_version != KILN_RUNTIME_ABI_VERSION) {
    std::string hint = manifest.abi_version < KILN_RUNTIME_ABI_VERSION
                           ? "; export the module again with this version of kiln"
                           : "; load it with a newer kiln runtime";
    return "module has ABI version " + std::to_string(manifest.abi_version) +
           ", this runtime runs ABI version " + std::to_string(KILN_RUNTIME_ABI_VERSION) + hint;
  }
  std::vector<std::string> words = split_words(manifest.target);
  if (words.empty()) return "target is empty";
  if (words[0] != "llvm" && words[0] != "c") {
    return "target kind '" + words[0] +
           "' is not a host target (expected llvm or c; device code belongs in device_blobs)";
  }
  const std::string triple_option = "-mtriple=";
  for (const std::string& word : words) {
    if (word.compare(0, triple_option.size(), triple_option) == 0) {
      std::string mismatch = check_target_triple(word.substr(triple_option.size()));
      if (!mismatch.empty()) return "target '" + manifest.target + "': " + mismatch;
    }
  }
  std::vector<std::string> missing = missing_cpu_features(manifest.host_features);
  if (!missing.empty()) {
    std::string names;
    for (const std::string& name : missing) names += (names.empty() ? "" : ", ") + name;
    return "module needs CPU features this CPU lacks: " + names + " (target '" + manifest.target +
           "')";
  }
  int opencl_blobs = 0;
  for (size_t i = 0; i < manifest.device_blobs.size(); ++i) {
    const DeviceBlob& blob = manifest.device_blobs[i];
    std::string where = "device_blobs[" + std::to_string(i) + "]";
    if (blob.kind != "opencl" && blob.kind != "cuda") {
      return where + ": device code of kind '" + blob.kind +
             "', which this runtime does not load (it loads 'opencl' and 'cuda')";
    }
    bool known = blob.kind == "opencl" ? blob.format == "cl"
                                       : blob.format == "cubin" || blob.format == "ptx";
    if (!known) {
      return where + ": " + blob.kind + " device code in format '" + blob.format +
             "', which this runtime does not load (it loads " +
             (blob.kind == "opencl" ? "'cl'" : "'cubin' and 'ptx'") + ")";
    }
    if (blob.kind == "opencl" && ++opencl_blobs > 1) {
      return where + ": a second OpenCL blob; a module carries one OpenCL program";
    }
  }
  return "";
}

}  // namespace runtime
}  // namespace kiln
