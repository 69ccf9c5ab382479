// What libnpumem.so exports (read from its ELF dynamic symbol table): every function
// of npumem.h; every symbol libnpumem.a defines for a class or function of the other
// public headers; and nothing else of the library's insides.
#include <cxxabi.h>
#include <elf.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace {

std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

template <typename T>
T read_at(const std::string& image, std::size_t offset) {
  T value{};
  if (offset + sizeof(T) <= image.size()) std::memcpy(&value, image.data() + offset, sizeof(T));
  return value;
}

std::string demangled(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> text(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 ? std::string(text.get()) : name;
}

// The global and weak symbols the shared library defines in .dynsym, demangled.
std::set<std::string> exported_symbols() {
  const std::string image = file_text(NPUMEM_SHARED_LIBRARY);
  const auto header = read_at<Elf64_Ehdr>(image, 0);
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64) {
    ADD_FAILURE() << NPUMEM_SHARED_LIBRARY << " is not a 64-bit ELF file";
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
      names.insert(demangled(image.c_str() + strings.sh_offset + symbol.st_name));
    }
  }
  return names;
}

// The global symbols the static library defines, demangled (binutils' nm reads it).
std::set<std::string> archive_symbols() {
  const std::string command =
      std::string("nm --defined-only --extern-only --demangle --format=just-symbols '") +
      NPUMEM_STATIC_LIBRARY + "' 2>/dev/null";
  std::unique_ptr<FILE, decltype(&pclose)> pipe(popen(command.c_str(), "r"), &pclose);
  std::set<std::string> names;
  if (!pipe) return names;
  std::string line;
  for (int c = std::fgetc(pipe.get()); c != EOF; c = std::fgetc(pipe.get())) {
    if (c != '\n') {
      line += static_cast<char>(c);
    } else if (!line.empty()) {
      names.insert(line);
      line.clear();
    }
  }
  return names;
}

std::set<std::string> matches(const std::string& text, const std::regex& pattern) {
  std::set<std::string> found;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern);
       it != std::sregex_iterator(); ++it) {
    found.insert((*it)[1]);
  }
  return found;
}

std::vector<std::filesystem::path> cpp_public_headers() {
  std::vector<std::filesystem::path> headers;
  for (const auto& entry : std::filesystem::directory_iterator(NPUMEM_PUBLIC_HEADERS)) {
    if (entry.path().filename() != "npumem.h") headers.push_back(entry.path());
  }
  return headers;
}

// A C++ symbol is public when, inside npumem:: or npumem::plan::, it belongs to a
// class declared at namespace scope (unindented) in a public header, or is a free
// function declared there whose parameters name only public types.
struct PublicApi {
  std::set<std::string> types;  // classes, structs, enums, aliases
  std::set<std::string> classes;
  std::set<std::string> functions;

  bool contains(const std::string& symbol) const {
    static const std::regex scoped(
        R"(^(?:(?:vtable|typeinfo|typeinfo name) for )?npumem::(?:plan::)?(\w+)(::|\(|\[abi|$))");
    std::smatch match;
    if (!std::regex_search(symbol, match, scoped)) return false;
    if (symbol.find("Allocator::Impl") != std::string::npos) return false;
    if (match[2] == "::" || match[2].length() == 0) return classes.contains(match[1]);
    if (!functions.contains(match[1])) return false;
    static const std::regex named_type(R"(npumem::(?:plan::)?(\w+))");
    const std::string parameters = symbol.substr(symbol.find('('));
    for (const std::string& type : matches(parameters, named_type)) {
      if (!types.contains(type)) return false;
    }
    return true;
  }
};

class CapiExports : public ::testing::Test {
 protected:
  void SetUp() override {
    exported_ = exported_symbols();
    ASSERT_FALSE(exported_.empty());
    static const std::regex class_declaration(R"((?:^|\n)(?:class|struct) (\w+))");
    static const std::regex type_declaration(R"((?:^|\n)(?:class|struct|enum class|using) (\w+))");
    static const std::regex function_declaration(
        R"((?:^|\n)(?!using |namespace )[A-Za-z][^\n(;=]*?\b(\w+)\()");
    for (const auto& header : cpp_public_headers()) {
      const std::string text = file_text(header);
      api_.classes.merge(matches(text, class_declaration));
      api_.types.merge(matches(text, type_declaration));
      api_.functions.merge(matches(text, function_declaration));
    }
    ASSERT_TRUE(api_.classes.contains("Allocator"));
    ASSERT_TRUE(api_.types.contains("Tier"));
    ASSERT_TRUE(api_.functions.contains("make_device"));
  }

  std::set<std::string> exported_;
  PublicApi api_;
};

TEST_F(CapiExports, EveryFunctionOfTheCHeaderIsExported) {
  const std::set<std::string> declared =
      matches(file_text(NPUMEM_PUBLIC_HEADERS "/npumem.h"), std::regex(R"(\b(npumem_\w+)\()"));
  EXPECT_GE(declared.size(), 17U) << "the header's declarations were not found";
  for (const std::string& name : declared) EXPECT_TRUE(exported_.contains(name)) << name;
}

TEST_F(CapiExports, EveryPublicCppSymbolOfTheLibraryIsExported) {
  const std::set<std::string> defined = archive_symbols();
  ASSERT_TRUE(defined.contains("npumem::Allocator::deallocate(void*)")) << "nm failed";
  std::size_t checked = 0;
  for (const std::string& symbol : defined) {
    if (!api_.contains(symbol)) continue;
    ++checked;
    EXPECT_TRUE(exported_.contains(symbol)) << symbol << " is public but not in libnpumem.map";
  }
  EXPECT_GT(checked, 50U);
}

TEST_F(CapiExports, NothingInternalIsExported) {
  for (const std::string& symbol : exported_) {
    if (symbol.starts_with("npumem_")) continue;  // the C ABI
    EXPECT_TRUE(api_.contains(symbol)) << symbol << " is exported";
    for (const char* internal : {"SimSpec", "SimDevice", "CudaDevice", "HostDevice"}) {
      EXPECT_EQ(symbol.find(internal), std::string::npos) << symbol << " is exported";
    }
  }
}

}  // namespace
