// What libnpumem.so exports (read from its ELF dynamic symbol table): every function
// of npumem.h; every symbol libnpumem.a defines for a class or function of the other
// public headers; and nothing else of the library's insides.
#include <cxxabi.h>
#include <elf.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text(std::filesystem::file_size(path), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  return text;
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
// Weak functions are left out: they are inline functions of the headers, which every
// user compiles for itself.
std::set<std::string> archive_symbols() {
  const std::string command = std::string("nm --defined-only --extern-only --demangle '") +
                              NPUMEM_STATIC_LIBRARY + "' 2>/dev/null";
  std::unique_ptr<FILE, decltype(&pclose)> pipe(popen(command.c_str(), "r"), &pclose);
  std::set<std::string> names;
  if (!pipe) return names;
  // Lines are "<16 hex digits> <type letter> <name>".
  constexpr std::size_t kType = 17;
  constexpr std::size_t kName = 19;
  std::string line;
  for (int c = std::fgetc(pipe.get()); c != EOF; c = std::fgetc(pipe.get())) {
    if (c != '\n') {
      line += static_cast<char>(c);
      continue;
    }
    const bool weak_function = line.size() > kType && (line[kType] == 'W' || line[kType] == 'w');
    if (line.size() > kName && !weak_function && line.find("npumem") != std::string::npos) {
      names.insert(line.substr(kName));
    }
    line.clear();
  }
  return names;
}

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

std::string identifier_at(std::string_view text, std::size_t at) {
  std::size_t end = at;
  while (end < text.size() && is_identifier_char(text[end])) ++end;
  return std::string(text.substr(at, end - at));
}

std::string identifier_before(std::string_view text, std::size_t end) {
  std::size_t start = end;
  while (start > 0 && is_identifier_char(text[start - 1])) --start;
  return std::string(text.substr(start, end - start));
}

// Every name X of "npumem::X" or "npumem::plan::X" in text.
std::set<std::string> npumem_names_in(std::string_view text) {
  std::set<std::string> names;
  for (std::size_t at = text.find("npumem::"); at != std::string_view::npos;
       at = text.find("npumem::", at + 1)) {
    std::size_t name = at + std::string_view("npumem::").size();
    if (text.substr(name).starts_with("plan::")) name += std::string_view("plan::").size();
    names.insert(identifier_at(text, name));
  }
  return names;
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

  // Reads the unindented declarations of a header.
  void add_declarations(const std::string& header_text) {
    std::istringstream lines(header_text);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || !std::isalpha(static_cast<unsigned char>(line[0]))) continue;
      for (const std::string_view keyword : {"class ", "struct ", "enum class ", "using "}) {
        if (!line.starts_with(keyword)) continue;
        const std::string name = identifier_at(line, keyword.size());
        types.insert(name);
        if (keyword == "class " || keyword == "struct ") classes.insert(name);
      }
      const std::size_t call = line.find('(');
      const bool declaration = !line.starts_with("using ") && !line.starts_with("namespace ") &&
                               line.find('=') > call && line.find(';') > call;
      if (call != std::string::npos && declaration) functions.insert(identifier_before(line, call));
    }
  }

  bool contains(std::string_view symbol) const {
    for (const std::string_view prefix : {"vtable for ", "typeinfo for ", "typeinfo name for "}) {
      if (symbol.starts_with(prefix)) {
        symbol.remove_prefix(prefix.size());
        break;
      }
    }
    if (!symbol.starts_with("npumem::")) return false;
    std::size_t at = std::string_view("npumem::").size();
    if (symbol.substr(at).starts_with("plan::")) at += std::string_view("plan::").size();
    const std::string name = identifier_at(symbol, at);
    const std::string_view rest = symbol.substr(at + name.size());
    if (rest.empty()) return classes.contains(name);
    if (rest.starts_with("::")) return classes.contains(name) && !rest.starts_with("::Impl::");
    if (!functions.contains(name)) return false;
    const std::size_t parameters = rest.find('(');
    if (parameters == std::string_view::npos) return false;
    for (const std::string& type : npumem_names_in(rest.substr(parameters))) {
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
    for (const auto& header : cpp_public_headers()) api_.add_declarations(file_text(header));
    ASSERT_TRUE(api_.classes.contains("Allocator"));
    ASSERT_TRUE(api_.types.contains("Tier"));
    ASSERT_TRUE(api_.functions.contains("make_device"));
  }

  std::set<std::string> exported_;
  PublicApi api_;
};

TEST_F(CapiExports, EveryFunctionOfTheCHeaderIsExported) {
  const std::string header = file_text(NPUMEM_PUBLIC_HEADERS "/npumem.h");
  std::set<std::string> declared;
  for (std::size_t call = header.find('('); call != std::string::npos;
       call = header.find('(', call + 1)) {
    const std::string name = identifier_before(header, call);
    if (name.starts_with("npumem_")) declared.insert(name);
  }
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
