#pragma once
// A trial's typed spec (spec/trial_spec.hpp) on the wire. The driver parses a trial's
// hyper-parameters once, when it first sees the trial, and sends the spec in Assign, Profile
// and Test: the actor trains what the driver checked and never parses the map again. cereal
// finds these by argument-dependent lookup, so they live in the spec's namespace; protocol.cpp
// instantiates them. A field added to a spec struct is added here too, with kProtocolVersion
// raised (tests/src/protocol checks a spec of unlike values round trip).
#include "spec/trial_spec.hpp"

namespace packtune::spec {

template <class Archive>
void serialize(Archive& ar, LrSchedule& s) {
  ar(s.name, s.warmup, s.step_every, s.factor);
}

template <class Archive>
void serialize(Archive& ar, ModelSpec& m) {
  ar(m.family, m.depth, m.width, m.activation, m.dropout, m.channels, m.kernel, m.batch_norm, m.stages, m.blocks,
     m.params);
}

template <class Archive>
void serialize(Archive& ar, OptimizerSpec& o) {
  ar(o.name);
#define OPTIMIZER_KEY(field, type, default_value, low, high, perturbable, doc) ar(o.field);
#include "spec/optimizers.def"
  ar(o.schedule, o.grad_clip_norm);
}

template <class Archive>
void serialize(Archive& ar, TrialSpec& t) {
  ar(t.model, t.optimizer, t.batch_size, t.label_smoothing);
}

}  // namespace packtune::spec
