// What libnpumem.so exports (read from its ELF dynamic symbol table): every function
// of npumem.h and the C++ public API, and nothing of the library's insides.
#include <cxxabi.h>
#include <elf.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace {

std::string file_text(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

template <typename T>
T read_at(const std::string& image, std::size_t offset) {
  T value{};
  if (offset + sizeof(T) <= image.size()) std::memcpy(&value, image.data() + offset, sizeof(T));
  return value;
}

// Names of the global and weak symbols the library defines in .dynsym.
std::set<std::string> exported_symbols(const char* path) {
  const std::string image = file_text(path);
  const auto header = read_at<Elf64_Ehdr>(image, 0);
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64) {
    ADD_FAILURE() << path << " is not a 64-bit ELF file";
    return {};
  }
  std::set<std::string> names;
  for (std::size_t i = 0; i < header.e_shnum; ++i) {
    const auto section = read_at<Elf64_Shdr>(image, header.e_shoff + i * header.e_shentsize);
    if (section.sh_type != SHT_DYNSYM) continue;
    const auto strings =
        read_at<Elf64_Shdr>(image, header.e_shoff + section.sh_link * header.e_shentsize);
    for (std::size_t at = 0; at + sizeof(Elf64_Sym) <= section.sh_size; at += sizeof(Elf64_Sym)) {
      const auto symbol = read_at<Elf64_Sym>(image, section.sh_offset + at);
      const unsigned bind = ELF64_ST_BIND(symbol.st_info);
      if (symbol.st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK)) continue;
      names.insert(image.c_str() + strings.sh_offset + symbol.st_name);
    }
  }
  return names;
}

std::string demangled(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> text(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 ? std::string(text.get()) : name;
}

std::set<std::string> functions_declared_in(const char* header) {
  const std::string text = file_text(header);
  const std::regex declaration(R"(\b(npumem_[a-z_]+)\()");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), declaration);
       it != std::sregex_iterator(); ++it) {
    names.insert((*it)[1]);
  }
  return names;
}

TEST(CapiExports, EveryFunctionOfTheCHeaderIsExported) {
  const std::set<std::string> exported = exported_symbols(NPUMEM_SHARED_LIBRARY);
  const std::set<std::string> declared = functions_declared_in(NPUMEM_C_HEADER);
  EXPECT_GE(declared.size(), 17U) << "the header's declarations were not found";
  for (const std::string& name : declared) EXPECT_TRUE(exported.contains(name)) << name;
}

TEST(CapiExports, TheCppPublicApiIsExported) {
  std::set<std::string> exported;
  for (const std::string& name : exported_symbols(NPUMEM_SHARED_LIBRARY)) {
    exported.insert(demangled(name));
  }
  for (const char* name :
       {"npumem::Allocator::allocate(unsigned long)", "npumem::Allocator::deallocate(void*)",
        "npumem::make_device(std::basic_string_view<char, std::char_traits<char> >)",
        "npumem::parse_config(std::basic_string_view<char, std::char_traits<char> >, "
        "npumem::Config)",
        "npumem::Stats::as_map[abi:cxx11]() const",
        "npumem::format_bytes[abi:cxx11](unsigned long)", "typeinfo for npumem::OutOfMemory",
        "vtable for npumem::Device"}) {
    EXPECT_TRUE(exported.contains(name)) << name;
  }
}

TEST(CapiExports, NothingInternalIsExported) {
  const std::set<std::string> exported = exported_symbols(NPUMEM_SHARED_LIBRARY);
  ASSERT_FALSE(exported.empty());
  for (const std::string& name : exported) {
    if (!name.starts_with("_Z")) {
      EXPECT_TRUE(name.starts_with("npumem_")) << "C symbol " << name;
      continue;
    }
    const std::string text = demangled(name);
    EXPECT_NE(text.find("npumem::"), std::string::npos) << text;
    for (const char* internal :
         {"npumem::core::", "npumem::capi::", "npumem::os::", "Allocator::Impl", "SimDevice",
          "HostDevice", "CudaDevice", "MappingTable", "AddressSpace", "FaultInjector",
          "parse_sim_spec"}) {
      EXPECT_EQ(text.find(internal), std::string::npos) << text;
    }
    EXPECT_FALSE(text.starts_with("std::")) << text;
  }
}

}  // namespace
