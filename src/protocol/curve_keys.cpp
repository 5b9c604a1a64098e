#include "protocol/curve_keys.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <vector>

#include <spdlog/spdlog.h>

#include "packtune/error.hpp"

namespace packtune {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kZ85KeyLength = 40;

// The mode bits a key file must not have, as ssh refuses a private key others can read: a
// secret key readable by group or others is no secret; a public key or the list of admitted
// actors that others can write lets them swap in their own key.
constexpr mode_t kSecretForbidden = S_IRWXG | S_IRWXO;
constexpr mode_t kPublicForbidden = S_IWGRP | S_IWOTH;
// A folder others can write into lets them rename their own files over the keys, whatever
// the files' modes: a file's mode does not protect its name in the folder.
constexpr mode_t kFolderForbidden = S_IWGRP | S_IWOTH;

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// Refuses a keys folder `root` that group or others can write into (`prefix`: "keys: " for
// `packtune keys`). A folder that is not there is left to the reads, which name the file.
void check_keys_folder(const fs::path& root, const std::string& prefix) {
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) throw InputError(prefix + root.string() + " is not a folder; name the folder of the keys");
  if ((st.st_mode & kFolderForbidden) != 0) {
    throw InputError(prefix + root.string() + ": its permissions " + mode_text(st.st_mode) +
                     " let other users write into it and replace the keys; run chmod 700 " + root.string());
  }
}

// The text of a key file, checked on the descriptor it is read from (no window between the
// check and the read for a rename).
std::string read_key_file(const fs::path& path, mode_t forbidden) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path.string() + ": cannot read the key; make keys with `packtune keys DIR`");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw InputError(path.string() + ": not a regular file; make keys with `packtune keys DIR`");
  }
  if ((st.st_mode & forbidden) != 0) {
    ::close(fd);
    throw InputError(path.string() + ": its permissions " + mode_text(st.st_mode) + " let others " +
                     (forbidden == kSecretForbidden ? "read it" : "change it") + "; run chmod 600 " + path.string());
  }
  std::string text;
  char buffer[4096];
  ssize_t n;
  // A key file is a line; authorized_actors a few hundred. 1 MiB bounds a wrong file.
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0 && text.size() < (1u << 20)) text.append(buffer, n);
  const int read_error = errno;
  ::close(fd);
  if (n < 0) throw InputError(path.string() + ": cannot read the key (" + std::strerror(read_error) + ")");
  return text;
}

std::string read_key(const fs::path& path) {
  const bool secret = path.extension() == ".key";
  std::istringstream in(read_key_file(path, secret ? kSecretForbidden : kPublicForbidden));
  std::string key;
  in >> key;
  if (key.size() != kZ85KeyLength) {
    throw InputError(path.string() + ": not a CURVE key (40 Z85 characters); make keys with `packtune keys DIR`");
  }
  return key;
}

// A new file, the owner's alone: never one that is there, nor through a link planted in its name.
void write_file(const fs::path& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) throw InputError(path.string() + " exists; packtune keys writes only new files");
    throw Error(path.string() + ": cannot create (" + std::strerror(errno) + ")");
  }
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      throw Error(path.string() + ": cannot write (" + std::strerror(errno) + ")");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) throw Error(path.string() + ": cannot write (" + std::strerror(errno) + ")");
}

std::pair<std::string, std::string> new_key_pair() {
  std::array<char, kZ85KeyLength + 1> public_key{}, secret_key{};
  if (zmq_curve_keypair(public_key.data(), secret_key.data()) != 0) {
    throw Error("cannot make CURVE keys: this libzmq was built without CURVE (libsodium)");
  }
  return {public_key.data(), secret_key.data()};
}

std::string z85(const void* bytes, std::size_t size) {
  std::vector<char> text(size * 5 / 4 + 1);
  if (size % 4 != 0 || zmq_z85_encode(text.data(), static_cast<const std::uint8_t*>(bytes), size) == nullptr) {
    return "(unreadable key)";
  }
  return text.data();
}

}  // namespace

void make_keys(const std::string& dir) {
  const fs::path root(dir);
  // Any one of them: authorized_actors may list keys added by hand, and a lone actor.pub may be
  // what another machine's actors were given.
  for (const char* name : {"driver.key", "driver.pub", "actor.key", "actor.pub", "authorized_actors"}) {
    std::error_code ec;
    if (fs::symlink_status(root / name, ec).type() != fs::file_type::not_found) {
      throw InputError((root / name).string() + " exists; remove " + dir + " to make new keys (actors with the old ones are then refused)");
    }
  }
  // A new folder is made the owner's alone. An existing one keeps its mode (others may read
  // it; the files are 0600 anyway), must be empty (whatever else is in it may be someone
  // else's, and a link there could point anywhere) and must not let others write into it.
  if (::mkdir(root.c_str(), 0700) != 0) {
    if (errno != EEXIST) throw InputError("keys: cannot create " + dir + " (" + std::strerror(errno) + ")");
    struct stat st {};
    if (::lstat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      throw InputError("keys: " + dir + " exists and is not a folder; name a new or empty folder");
    }
    std::error_code ec;
    if (!fs::is_empty(root, ec) || ec) {
      throw InputError("keys: " + dir + " is not empty; name a new or empty folder");
    }
    check_keys_folder(root, "keys: ");
  }
  const auto [driver_public, driver_secret] = new_key_pair();
  const auto [actor_public, actor_secret] = new_key_pair();
  write_file(root / "driver.key", driver_secret + "\n");
  write_file(root / "driver.pub", driver_public + "\n");
  write_file(root / "actor.key", actor_secret + "\n");
  write_file(root / "actor.pub", actor_public + "\n");
  write_file(root / "authorized_actors",
             "# Public keys (actor.pub) of the actors the driver admits, one per line.\n" + actor_public + "\n");
}

namespace {

// What both sides read: the driver's public key.
CurveKeys keys_in(const std::string& dir) {
  check_keys_folder(dir, "");
  CurveKeys keys;
  keys.dir = dir;
  keys.driver_public = read_key(fs::path(dir) / "driver.pub");
  return keys;
}

}  // namespace

CurveKeys load_driver_keys(const std::string& dir) {
  const fs::path root(dir);
  auto keys = keys_in(dir);
  keys.driver_secret = read_key(root / "driver.key");
  std::istringstream in(read_key_file(root / "authorized_actors", kPublicForbidden));
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const auto begin = line.find_first_not_of(" \t\r");
    if (begin == std::string::npos || line[begin] == '#') continue;
    const auto key = line.substr(begin, line.find_last_not_of(" \t\r") + 1 - begin);
    if (key.size() != kZ85KeyLength) {
      throw InputError((root / "authorized_actors").string() + ":" + std::to_string(number) +
                       ": not a CURVE public key (40 Z85 characters)");
    }
    keys.authorized.insert(key);
  }
  if (keys.authorized.empty()) {
    throw InputError((root / "authorized_actors").string() + ": no actor key; add actor.pub's line");
  }
  return keys;
}

CurveKeys load_actor_keys(const std::string& dir) {
  const fs::path root(dir);
  auto keys = keys_in(dir);
  keys.actor_public = read_key(root / "actor.pub");
  keys.actor_secret = read_key(root / "actor.key");
  return keys;
}

bool reaches_beyond_this_machine(const std::string& endpoint) {
  const std::string tcp = "tcp://";
  if (endpoint.rfind(tcp, 0) != 0) return false;
  std::string host = endpoint.substr(tcp.size());
  host = host.substr(0, host.rfind(':'));
  if (host.size() > 1 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return !(host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0 || host == "lo");
}

CurveServer::CurveServer(zmq::socket_t& socket, CurveKeys keys)
    : keys_(std::move(keys)),
      unknown_keys_("peer(s) whose CURVE key is not in " + keys_.dir + "/authorized_actors"),
      no_curve_("peer(s) that did not authenticate with CURVE") {
  socket.set(zmq::sockopt::curve_server, 1);
  socket.set(zmq::sockopt::curve_secretkey, keys_.driver_secret);
}

bool CurveServer::authenticates(const std::vector<zmq::message_t>& request, std::chrono::steady_clock::time_point now) {
  // ZAP (ZeroMQ RFC 27): version, request id, domain, address, routing id, mechanism, then
  // the mechanism's credentials (CURVE: the client's 32-byte public key).
  const auto text = [&](std::size_t i) { return i < request.size() ? request[i].to_string() : std::string(); };
  if (text(5) != "CURVE" || request.size() <= 6 || request[6].size() != 32) {
    no_curve_.refuse(text(3), now);
    return false;
  }
  const auto key = z85(request[6].data(), request[6].size());
  if (keys_.authorized.count(key) > 0) return true;
  // A refused peer tries again, and a hostile one may offer a new key each time: counted,
  // with a few keys named (refusal_log.hpp).
  unknown_keys_.refuse(key + " from " + (text(3).empty() ? "an unknown address" : text(3)), now);
  return false;
}

void CurveServer::flush(std::chrono::steady_clock::time_point now) {
  unknown_keys_.flush(now);
  no_curve_.flush(now);
}

void use_curve_client(zmq::socket_t& socket, const CurveKeys& keys) {
  socket.set(zmq::sockopt::curve_serverkey, keys.driver_public);
  socket.set(zmq::sockopt::curve_publickey, keys.actor_public);
  socket.set(zmq::sockopt::curve_secretkey, keys.actor_secret);
}

}  // namespace packtune
