#include "spec/trial_spec.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "packtune/error.hpp"
#include "spec/declared_families.hpp"
#include "spec/optimizer_table.hpp"

namespace packtune::spec {
namespace {

using tuners::ParamValue;

std::string expected_list(const std::vector<std::string>& options) {
  std::string out;
  for (const auto& o : options) out += (out.empty() ? "" : ", ") + o;
  return out;
}

std::int64_t as_integer(const ParamValue& v, const std::string& at, double low, double high) {
  double d = 0;
  if (const auto* i = std::get_if<std::int64_t>(&v)) {
    d = static_cast<double>(*i);
  } else if (const auto* f = std::get_if<double>(&v); f && std::floor(*f) == *f) {
    d = *f;
  } else {
    throw InputError(at + ": expected an integer, got " + tuners::to_string(v));
  }
  if (d < low || d > high) {
    throw InputError(at + ": " + tuners::to_string(v) + " is out of range; expected " +
                     std::to_string(static_cast<std::int64_t>(low)) + " to " +
                     std::to_string(static_cast<std::int64_t>(high)));
  }
  return static_cast<std::int64_t>(d);
}

int as_int(const ParamValue& v, const std::string& at, int low, int high) {
  return static_cast<int>(as_integer(v, at, low, high));
}

double as_real(const ParamValue& v, const std::string& at, double low, double high) {
  if (std::holds_alternative<std::string>(v) || std::holds_alternative<bool>(v)) {
    throw InputError(at + ": expected a number, got " + tuners::to_string(v));
  }
  const double d = tuners::as_number(v, at);
  if (!(d >= low && d <= high)) {
    throw InputError(at + ": " + tuners::to_string(v) + " is out of range; expected " +
                     tuners::to_string(ParamValue(low)) + " to " + tuners::to_string(ParamValue(high)));
  }
  return d;
}

bool as_bool(const ParamValue& v, const std::string& at) {
  if (const auto* b = std::get_if<bool>(&v)) return *b;
  throw InputError(at + ": expected true or false, got " + tuners::to_string(v));
}

// The readers of spec/optimizers.def's key types.
double read_real(const ParamValue& v, const std::string& at, double low, double high) { return as_real(v, at, low, high); }
bool read_flag(const ParamValue& v, const std::string& at, double, double) { return as_bool(v, at); }

std::string as_enum(const ParamValue& v, const std::string& at,
                    const std::vector<std::string>& options) {
  const auto* s = std::get_if<std::string>(&v);
  if (!s || std::find(options.begin(), options.end(), *s) == options.end()) {
    throw InputError(at + ": " + tuners::to_string(v) + " is not allowed; expected one of " +
                     expected_list(options));
  }
  return *s;
}

// A CIFAR-style ResNet (actors/resnet.hpp): a 3x3 stem, `stages` stages of `blocks` basic blocks
// (two 3x3 convolutions and a residual add; the first block of a later stage halves the image
// and projects the shortcut with a 1x1 convolution), global average pooling and a classifier.
ModelShape resnet_shape(const ModelSpec& spec, int channels, int height, int width, int classes) {
  ModelShape s;
  const bool bn = spec.batch_norm;
  std::int64_t h = height, w = width;
  // A convolution with its batch norm: weights, the input kept for backward, the outputs
  // of the convolution, the norm and the activation.
  auto conv = [&](std::int64_t in, std::int64_t out, std::int64_t kernel) {
    const std::int64_t weights = in * out * kernel * kernel;
    s.parameters += weights + (bn ? 2 * out : out);
    s.largest_parameter = std::max(s.largest_parameter, weights);
    s.flops_per_sample += 2 * weights * h * w;
    s.activations_per_sample += out * h * w * (bn ? 3 : 2);
  };
  s.activations_per_sample += std::int64_t{channels} * h * w;
  std::int64_t c = spec.channels;
  conv(channels, c, 3);
  for (int stage = 0; stage < spec.stages; ++stage) {
    const std::int64_t out = std::int64_t{spec.channels} << stage;
    for (int block = 0; block < spec.blocks; ++block) {
      const bool down = stage > 0 && block == 0;
      if (down) {
        h = (h + 1) / 2;
        w = (w + 1) / 2;
        conv(c, out, 1);  // the shortcut's projection
      }
      conv(c, out, 3);
      conv(out, out, 3);
      s.activations_per_sample += out * h * w;  // the residual sum
      c = out;
    }
  }
  s.activations_per_sample += c * (1 + (spec.dropout > 0 ? 1 : 0));
  s.parameters += c * classes + classes;
  s.largest_parameter = std::max(s.largest_parameter, c * classes);
  s.flops_per_sample += 2 * c * classes;
  return s;
}

// The keys every family takes, one row each: how it is read, and whether a trial may change it
// while it trains (population-based training perturbs those).
struct TrainingKey {
  const char* name;
  bool perturbable;
  void (*read)(const ParamValue& value, const std::string& at, TrialSpec& spec);
};

const std::vector<TrainingKey>& training_keys() {
  using V = const ParamValue&;
  using A = const std::string&;
  static const std::vector<TrainingKey> keys = {
      {"optimizer", false, [](V v, A at, TrialSpec& s) { s.optimizer.name = as_enum(v, at, optimizer_names()); }},
#define OPTIMIZER_KEY(field, type, default_value, low, high, perturbable, doc) \
  {#field, perturbable, [](V v, A at, TrialSpec& s) { s.optimizer.field = read_##type(v, at, low, high); }},
#include "spec/optimizers.def"
      {"lr_schedule", false,
       [](V v, A at, TrialSpec& s) { s.optimizer.schedule.name = as_enum(v, at, schedule_names()); }},
      {"lr_warmup", false, [](V v, A at, TrialSpec& s) { s.optimizer.schedule.warmup = as_real(v, at, 0.0, 1e9); }},
      {"lr_step_every", false,
       [](V v, A at, TrialSpec& s) { s.optimizer.schedule.step_every = as_real(v, at, 1e-9, 1e9); }},
      {"lr_step_factor", false,
       [](V v, A at, TrialSpec& s) { s.optimizer.schedule.factor = as_real(v, at, 1e-6, 1.0); }},
      {"grad_clip_norm", true, [](V v, A at, TrialSpec& s) { s.optimizer.grad_clip_norm = as_real(v, at, 0.0, 1e9); }},
      {"label_smoothing", true, [](V v, A at, TrialSpec& s) { s.label_smoothing = as_real(v, at, 0.0, 0.999); }},
      {"batch_size", false, [](V v, A at, TrialSpec& s) { s.batch_size = as_int(v, at, 1, 1 << 16); }},
  };
  return keys;
}

// False: `key` is not a training key. Hashed: the driver parses every trial it opens.
bool parse_common(const std::string& key, const ParamValue& value, const std::string& at, TrialSpec& spec) {
  static const auto by_name = [] {
    std::unordered_map<std::string, const TrainingKey*> keys;
    for (const auto& k : training_keys()) keys.emplace(k.name, &k);
    return keys;
  }();
  const auto it = by_name.find(key);
  if (it == by_name.end()) return false;
  it->second->read(value, at, spec);
  return true;
}

void check_optimizer(const OptimizerSpec& o, const std::string& where) {
  if (o.nesterov && optimizer_row(o.name, where + ".optimizer").kind == OptimizerKind::Sgd && o.momentum <= 0) {
    throw InputError(where + ".nesterov: Nesterov momentum needs momentum > 0");
  }
  if (o.schedule.name == "step" && !(o.schedule.step_every > 0)) {
    throw InputError(where + ".lr_step_every: lr_schedule \"step\" needs the budget between decays (> 0)");
  }
}

// A built-in family or a declared one.
std::string as_family(const ParamValue& v, const std::string& at) {
  const auto& builtin = builtin_families();
  if (const auto* name = std::get_if<std::string>(&v); name && std::find(builtin.begin(), builtin.end(), *name) != builtin.end()) {
    return *name;
  }
  auto options = builtin;
  for (const auto& name : DeclaredFamilies::instance().names()) options.push_back(name);
  return as_enum(v, at, options);
}

TrialSpec parse_plugin_spec(const tuners::TrialConfig& config, const std::string& where,
                            const layers::FamilyDeclaration& family) {
  TrialSpec spec;
  spec.model.family = family.name;
  for (const auto& p : family.hyperparameters) {
    spec.model.params[p.name] = declared_value(p, p.default_value, where + "." + p.name);
  }
  for (const auto& [key, value] : config) {
    const std::string at = where + "." + key;
    if (key == "family" || parse_common(key, value, at, spec)) continue;
    // A structured binding cannot be captured in C++17 (clang refuses it): capture a reference.
    const std::string& name = key;
    auto p = std::find_if(family.hyperparameters.begin(), family.hyperparameters.end(),
                          [&name](const layers::HyperParameter& h) { return h.name == name; });
    if (p == family.hyperparameters.end()) {
      std::vector<std::string> names;
      for (const auto& h : family.hyperparameters) names.push_back(h.name);
      for (const auto& c : common_hyperparameters()) names.push_back(c);
      throw InputError(at + ": not a hyper-parameter of model family " + family.name + "; expected one of " +
                       expected_list(names));
    }
    spec.model.params[key] = declared_value(*p, value, at);
  }
  return spec;
}

// A TorchScript module's keys: its file, the common ones, and attributes of the module to set
// before it trains (a dropout rate its forward reads as self.rate). The module itself (its
// forward, its outputs, whether it has those attributes) is checked where LibTorch is, by the
// actor (actors/torchscript_file.hpp).
TrialSpec parse_torchscript_spec(const tuners::TrialConfig& config, const std::string& where) {
  TrialSpec spec;
  spec.model.family = "torchscript";
  for (const auto& [key, value] : config) {
    const std::string at = where + "." + key;
    if (key == "family" || parse_common(key, value, at, spec)) continue;
    if (key != "path") {
      spec.model.params[key] = value;
      continue;
    }
    const auto* path = std::get_if<std::string>(&value);
    if (!path || path->empty()) {
      throw InputError(at + ": expected the path of a TorchScript file (.pt), got " + tuners::to_string(value));
    }
    spec.model.params["path"] = *path;
  }
  if (!spec.model.params.count("path")) {
    throw InputError(where + ".path: model family torchscript needs the path of a TorchScript file "
                     "(torch.jit.script(model).save(\"net.pt\")), in model or space");
  }
  return spec;
}

// The plugin family's values of the roles asked for, in declaration order: "/name=value".
std::string role_values(const ModelSpec& m, bool structure, bool width) {
  const auto* family = DeclaredFamilies::instance().find(m.family);
  if (!family) throw Error("model family " + m.family + " is not declared in this process");
  std::string out;
  for (const auto& p : family->hyperparameters) {
    using Role = layers::HyperParameter::Role;
    if (!((structure && p.role == Role::Structure) || (width && p.role == Role::Width))) continue;
    auto it = m.params.find(p.name);
    out += "/" + p.name + "=" + tuners::to_string(it == m.params.end() ? p.default_value : it->second);
  }
  return out;
}

}  // namespace

tuners::ParamValue declared_value(const layers::HyperParameter& p, const tuners::ParamValue& value,
                                  const std::string& at) {
  using Type = layers::HyperParameter::Type;
  switch (p.type) {
    case Type::Integer: return as_integer(value, at, p.low, p.high);
    case Type::Real: return as_real(value, at, p.low, p.high);
    case Type::Boolean: return as_bool(value, at);
    case Type::Choice: return as_enum(value, at, p.choices);
  }
  return value;
}

bool plugin_family(const ModelSpec& spec) {
  const auto& builtin = builtin_families();
  return std::find(builtin.begin(), builtin.end(), spec.family) == builtin.end();
}

bool torchscript_family(const ModelSpec& spec) { return spec.family == "torchscript"; }

const std::string& torchscript_path(const ModelSpec& spec) {
  const auto it = spec.params.find("path");
  const auto* path = it == spec.params.end() ? nullptr : std::get_if<std::string>(&it->second);
  if (!torchscript_family(spec) || !path) throw Error("model family " + spec.family + " has no TorchScript path");
  return *path;
}

tuners::TrialConfig torchscript_attributes(const ModelSpec& spec) {
  auto attributes = spec.params;
  attributes.erase("path");
  return attributes;
}

std::string attribute_kind(const tuners::ParamValue& value) {
  if (std::holds_alternative<bool>(value)) return "bool";
  if (std::holds_alternative<std::int64_t>(value)) return "integer";
  if (std::holds_alternative<double>(value)) return "real";
  return "string";
}

bool measured_family(const ModelSpec& spec) { return plugin_family(spec) || torchscript_family(spec); }

bool fuses(const ModelSpec& spec) { return !torchscript_family(spec); }

bool ModelSpec::operator==(const ModelSpec& o) const {
  return family == o.family && depth == o.depth && width == o.width &&
         activation == o.activation && dropout == o.dropout && channels == o.channels &&
         kernel == o.kernel && batch_norm == o.batch_norm && stages == o.stages && blocks == o.blocks &&
         params == o.params;
}

const std::vector<std::string>& training_hyperparameters() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& k : training_keys()) out.push_back(k.name);
    return out;
  }();
  return names;
}

const std::vector<std::string>& known_hyperparameters() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out = {"family", "depth",  "width",      "activation", "dropout",
                                    "channels", "kernel", "batch_norm", "stages",   "blocks"};
    for (const auto& k : training_keys()) out.push_back(k.name);
    return out;
  }();
  return names;
}

const std::vector<std::string>& perturbable_hyperparameters() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& k : training_keys()) {
      if (k.perturbable) out.push_back(k.name);
    }
    out.push_back("dropout");
    return out;
  }();
  return names;
}

TrialSpec parse_trial_spec(const tuners::TrialConfig& config, const std::string& where) {
  // The family first: a plugin family's keys are its own.
  if (auto family = config.find("family"); family != config.end()) {
    const auto name = as_family(family->second, where + ".family");
    if (name == "torchscript") {
      auto spec = parse_torchscript_spec(config, where);
      check_optimizer(spec.optimizer, where);
      return spec;
    }
    if (const auto* declared = DeclaredFamilies::instance().find(name)) {
      auto spec = parse_plugin_spec(config, where, *declared);
      check_optimizer(spec.optimizer, where);
      return spec;
    }
  }
  TrialSpec spec;
  auto& m = spec.model;
  for (const auto& [key, value] : config) {
    const std::string at = where + "." + key;
    if (parse_common(key, value, at, spec)) continue;
    if (key == "family") m.family = as_family(value, at);
    else if (key == "depth") m.depth = as_int(value, at, 0, 16);
    else if (key == "width") m.width = as_int(value, at, 0, 1 << 16);
    else if (key == "activation") m.activation = as_enum(value, at, {"relu", "tanh", "gelu", "sigmoid"});
    else if (key == "dropout") m.dropout = as_real(value, at, 0.0, 0.95);
    else if (key == "channels") m.channels = as_int(value, at, 1, 4096);
    else if (key == "kernel") m.kernel = as_int(value, at, 1, 7);
    else if (key == "batch_norm") m.batch_norm = as_bool(value, at);
    else if (key == "stages") m.stages = as_int(value, at, 1, 4);
    else if (key == "blocks") m.blocks = as_int(value, at, 1, 8);
    else {
      throw InputError(at + ": unknown hyper-parameter; expected one of " +
                       expected_list(known_hyperparameters()));
    }
  }
  if (m.family == "mlp" && m.depth > 0 && m.width < 1) {
    throw InputError(where + ".width: an mlp with hidden layers needs width >= 1");
  }
  if (m.family == "cnn" && (m.depth < 1 || m.depth > 3)) {
    throw InputError(where + ".depth: a cnn on 28x28 images takes 1 to 3 conv blocks");
  }
  if (m.family == "resnet" && (m.channels << (m.stages - 1)) > 4096) {
    throw InputError(where + ".channels: a resnet doubles its channels each stage; " + std::to_string(m.channels) +
                     " channels over " + std::to_string(m.stages) + " stages passes 4096");
  }
  check_optimizer(spec.optimizer, where);
  return spec;
}

ModelShape model_shape(const ModelSpec& spec, int channels, int height, int width, int classes) {
  ModelShape s;
  if (measured_family(spec)) return s;
  // Per layer: parameters, and the activations autograd keeps (input, pre- and post-activation).
  auto linear = [&](std::int64_t in, std::int64_t out) {
    s.parameters += in * out + out;
    s.largest_parameter = std::max(s.largest_parameter, in * out);
    s.activations_per_sample += in + 2 * out;
    s.flops_per_sample += 2 * in * out;
  };
  if (spec.family == "mlp") {
    std::int64_t in = std::int64_t{channels} * height * width;
    for (int i = 0; i < spec.depth; ++i) {
      linear(in, spec.width);
      if (spec.dropout > 0) s.activations_per_sample += spec.width;
      in = spec.width;
    }
    linear(in, classes);
    return s;
  }
  if (spec.family == "resnet") return resnet_shape(spec, channels, height, width, classes);
  std::int64_t c = channels, h = height, w = width;
  for (int i = 0; i < spec.depth; ++i) {
    const std::int64_t out = std::int64_t{spec.channels} << i;
    const std::int64_t weights = c * out * spec.kernel * spec.kernel;
    s.parameters += weights + (spec.batch_norm ? 0 : out);
    s.largest_parameter = std::max(s.largest_parameter, weights);
    s.flops_per_sample += 2 * weights * h * w;
    s.activations_per_sample += c * h * w + out * h * w * (spec.batch_norm ? 3 : 2);
    if (spec.batch_norm) s.parameters += 2 * out;
    c = out;
    h /= 2;
    w /= 2;
    s.activations_per_sample += c * h * w;
  }
  std::int64_t in = c * h * w;
  if (spec.width > 0) {
    linear(in, spec.width);
    in = spec.width;
  }
  linear(in, classes);
  return s;
}

// The keys are built with appends, not a stream: the driver describes every trial it opens,
// and four ostringstreams a trial were about 3% of its loop at 10,000 actors.
namespace {
std::string num(std::int64_t v) { return std::to_string(v); }
std::string flag(bool v) { return v ? "1" : "0"; }
}  // namespace

std::string fusion_key(const TrialSpec& s) {
  const auto& m = s.model;
  if (torchscript_family(m)) return "torchscript/" + torchscript_path(m) + "/b" + num(s.batch_size);
  if (plugin_family(m)) return m.family + role_values(m, true, false) + "/b" + num(s.batch_size);
  if (m.family == "resnet") {
    return "resnet/s" + num(m.stages) + "x" + num(m.blocks) + "/" + m.activation + "/drop" + flag(m.dropout > 0) +
           "/b" + num(s.batch_size) + "/bn" + flag(m.batch_norm);
  }
  std::string key = m.family + "/d" + num(m.depth);
  // An MLP without hidden layers has no activation or dropout layer to differ in.
  if (m.family == "cnn" || m.depth > 0) key += "/" + m.activation + "/drop" + flag(m.dropout > 0);
  key += "/b" + num(s.batch_size);
  if (m.family == "cnn") key += "/k" + num(m.kernel) + "/bn" + flag(m.batch_norm) + "/fc" + flag(m.width > 0);
  return key;
}

std::string unpadded_fusion_key(const TrialSpec& s) {
  if (torchscript_family(s.model)) return fusion_key(s);  // a file is one shape: nothing to pad
  if (plugin_family(s.model)) return s.model.family + role_values(s.model, true, true) + "/b" + num(s.batch_size);
  std::string key = fusion_key(s);
  if (s.model.family != "resnet") key += "/w" + num(s.model.width);
  if (s.model.family != "mlp") key += "/c" + num(s.model.channels);
  return key;
}

std::string shape_key(const TrialSpec& s) {
  const auto& m = s.model;
  if (torchscript_family(m)) return fusion_key(s) + "/" + s.optimizer.name;
  if (plugin_family(m)) {
    return m.family + role_values(m, true, true) + "/b" + num(s.batch_size) + "/" + s.optimizer.name;
  }
  if (m.family == "resnet") {
    return "resnet/s" + num(m.stages) + "x" + num(m.blocks) + "/c" + num(m.channels) + "/" + m.activation + "/drop" +
           flag(m.dropout > 0) + "/b" + num(s.batch_size) + "/" + s.optimizer.name + "/bn" + flag(m.batch_norm);
  }
  std::string key = m.family + "/d" + num(m.depth) + "/w" + num(m.width) + "/" + m.activation + "/drop" +
                    flag(m.dropout > 0) + "/b" + num(s.batch_size) + "/" + s.optimizer.name;
  if (m.family == "cnn") key += "/c" + num(m.channels) + "/k" + num(m.kernel) + "/bn" + flag(m.batch_norm);
  return key;
}

std::int64_t evaluation_chunk(int batch_size) {
  return std::clamp<std::int64_t>(batch_size, 64, 1024);
}

}  // namespace packtune::spec
