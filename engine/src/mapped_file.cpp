#include "mapped_file.h"

#include <cstdio>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kiln {

StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound("%s: no such file", path.c_str());
    return IoError("%s: cannot open: %s", path.c_str(), std::strerror(errno));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return IoError("%s: cannot stat: %s", path.c_str(), std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return IoError("%s: not a regular file", path.c_str());
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return std::unique_ptr<MappedFile>(new MappedFile(nullptr, 0));
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);  // the mapping keeps the file alive
  if (p == MAP_FAILED) return IoError("%s: mmap failed: %s", path.c_str(), std::strerror(err));
  return std::unique_ptr<MappedFile>(new MappedFile(static_cast<const uint8_t*>(p), size));
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

void MappedFile::populate() const {
  if (!data_ || !size_) return;
#ifdef MADV_POPULATE_READ
  if (::madvise(const_cast<uint8_t*>(data_), size_, MADV_POPULATE_READ) == 0) return;
#endif
  const long page = ::sysconf(_SC_PAGESIZE);
  volatile uint8_t sink = 0;
  for (size_t at = 0; at < size_; at += static_cast<size_t>(page > 0 ? page : 4096)) sink = sink + data_[at];
}

Status WriteFileAtomically(const std::string& path, const void* data, size_t size, const char* what) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return Status(StatusCode::kIoError, StrFormat("%s: cannot open '%s' for writing", what, tmp.c_str()));
  const bool ok = size == 0 || std::fwrite(data, 1, size, f) == size;
  if (std::fclose(f) != 0 || !ok) {
    std::remove(tmp.c_str());
    return Status(StatusCode::kIoError, StrFormat("%s: writing '%s' failed", what, tmp.c_str()));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status(StatusCode::kIoError, StrFormat("%s: cannot rename '%s' to '%s'", what, tmp.c_str(), path.c_str()));
  }
  return Status::Ok();
}

}  // namespace kiln
