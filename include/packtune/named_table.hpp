#pragma once
// Entries by unique name, listed in name order: what the process-wide tables of model families
// hold (layers/model_registry.hpp: the families this process builds; spec/declared_families.hpp:
// those it knows by their declarations alone).
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace packtune {

template <class Entry>
class NamedTable {
 public:
  // False, and the table unchanged, when the name is taken.
  bool insert(const std::string& name, Entry entry) { return entries_.emplace(name, std::move(entry)).second; }
  // nullptr when no entry has that name.
  const Entry* find(const std::string& name) const {
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& entry : entries_) out.push_back(entry.first);
    return out;
  }

 private:
  std::map<std::string, Entry> entries_;
};

}  // namespace packtune
