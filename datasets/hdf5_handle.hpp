#pragma once
// One owned HDF5 identifier, closed with its kind's close function (HDF5 has one per kind of
// object): the user's data files (hdf5_reader.cpp) and the checkpoint files
// (actors/checkpoint_file.cpp, actors/checkpoint_read.cpp) are written and read with it.
#include <hdf5.h>

#include <utility>

namespace packtune::datasets {

class Hdf5Handle {
 public:
  Hdf5Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Hdf5Handle() {
    if (id_ >= 0) close_(id_);
  }
  Hdf5Handle(const Hdf5Handle&) = delete;
  Hdf5Handle& operator=(const Hdf5Handle&) = delete;
  Hdf5Handle(Hdf5Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  Hdf5Handle& operator=(Hdf5Handle&& o) noexcept {
    std::swap(id_, o.id_);
    std::swap(close_, o.close_);
    return *this;
  }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }
  // Closes now and reports failure: closing a file is when HDF5 writes its metadata.
  bool close() {
    const herr_t status = id_ >= 0 ? close_(id_) : 0;
    id_ = -1;
    return status >= 0;
  }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

}  // namespace packtune::datasets
