// ObjectMeta validation as kube-apiserver v1.32 does it for every kind, in its words: label
// keys and values (apimachinery pkg/apis/meta/v1/validation ValidateLabels), annotation keys
// and their total size (pkg/api/validation/objectmeta.go ValidateAnnotations), with the
// messages of pkg/util/validation/validation.go (IsQualifiedName, IsValidLabelValue,
// IsDNS1123Subdomain) and pkg/util/validation/field/errors.go (Invalid, TooLong).
#include <cctype>

#include "tests/kube-sim/impl.h"

namespace perfgate::kubesim {
namespace {

constexpr size_t kQualifiedNameMaxLength = 63;
constexpr size_t kLabelValueMaxLength = 63;
constexpr size_t kDns1123SubdomainMaxLength = 253;
constexpr size_t kTotalAnnotationSizeLimit = 256 * 1024;

bool Alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
bool QualifiedNameMatches(const std::string& s) {
  if (s.empty() || !Alnum(s.front()) || !Alnum(s.back())) return false;
  for (char c : s) {
    if (!Alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// [a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*
bool Dns1123SubdomainMatches(const std::string& s) {
  auto lower_alnum = [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0 || (c >= 'a' && c <= 'z');
  };
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    const std::string part = s.substr(start, dot == std::string::npos ? dot : dot - start);
    if (part.empty() || !lower_alnum(part.front()) || !lower_alnum(part.back())) return false;
    for (char c : part) {
      if (!lower_alnum(c) && c != '-') return false;
    }
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

// RegexError(msg, fmt, examples...) of apimachinery, with its double spaces.
std::string RegexError(const std::string& msg, const std::string& re,
                       const std::vector<std::string>& examples) {
  std::string out = msg + " (e.g. ";
  for (size_t i = 0; i < examples.size(); ++i) {
    if (i > 0) out += " or ";
    out += "'" + examples[i] + "', ";
  }
  return out + "regex used for validation is '" + re + "')";
}

const char* const kQualifiedNameErrMsg =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character";
const char* const kQualifiedNameFmt = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";

const char* const kDns1123SubdomainFmt =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";

std::vector<std::string> IsDns1123Subdomain(const std::string& value) {
  std::vector<std::string> errs;
  if (value.size() > kDns1123SubdomainMaxLength) {
    errs.push_back("must be no more than " + std::to_string(kDns1123SubdomainMaxLength) +
                   " characters");
  }
  if (!Dns1123SubdomainMatches(value)) {
    errs.push_back(RegexError(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
        "or '.', and must start and end with an alphanumeric character",
        kDns1123SubdomainFmt, {"example.com"}));
  }
  return errs;
}

std::vector<std::string> IsQualifiedName(const std::string& value) {
  std::vector<std::string> errs;
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t slash; (slash = value.find('/', start)) != std::string::npos; start = slash + 1) {
    parts.push_back(value.substr(start, slash - start));
  }
  parts.push_back(value.substr(start));
  const std::vector<std::string> examples = {"MyName", "my.name", "123-abc"};
  if (parts.size() > 2) {
    return {"a qualified name " + RegexError(kQualifiedNameErrMsg, kQualifiedNameFmt, examples) +
            " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"};
  }
  const std::string& name = parts.back();
  if (parts.size() == 2) {
    const std::string& prefix = parts.front();
    if (prefix.empty()) {
      errs.push_back("prefix part must be non-empty");
    } else {
      for (const auto& msg : IsDns1123Subdomain(prefix)) errs.push_back("prefix part " + msg);
    }
  }
  if (name.empty()) {
    errs.push_back("name part must be non-empty");
  } else if (name.size() > kQualifiedNameMaxLength) {
    errs.push_back("name part must be no more than " + std::to_string(kQualifiedNameMaxLength) +
                   " characters");
  }
  if (!QualifiedNameMatches(name)) {
    errs.push_back("name part " + RegexError(kQualifiedNameErrMsg, kQualifiedNameFmt, examples));
  }
  return errs;
}

std::vector<std::string> IsValidLabelValue(const std::string& value) {
  std::vector<std::string> errs;
  if (value.size() > kLabelValueMaxLength) {
    errs.push_back("must be no more than " + std::to_string(kLabelValueMaxLength) + " characters");
  }
  if (!value.empty() && !QualifiedNameMatches(value)) {
    errs.push_back(RegexError(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
        "or '.', and must start and end with an alphanumeric character",
        "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?", {"MyValue", "my_value", "12345"}));
  }
  return errs;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::vector<std::string> QualifiedNameErrors(const std::string& value) {
  return IsQualifiedName(value);
}

std::vector<FieldError> NameErrors(const std::string& name) {
  std::vector<FieldError> errs;
  for (const auto& msg : IsDns1123Subdomain(name)) {
    errs.push_back(
        {"FieldValueInvalid", "metadata.name", "Invalid value: \"" + name + "\": " + msg});
  }
  return errs;
}

std::vector<FieldError> MetadataErrors(const Json& md) {
  std::vector<FieldError> errs;
  if (!md.is_object()) return errs;
  auto invalid = [&](const char* field, const std::string& value, const std::string& msg) {
    errs.push_back({"FieldValueInvalid", field, "Invalid value: \"" + value + "\": " + msg});
  };
  if (md.contains("labels") && md["labels"].is_object()) {
    for (const auto& [key, v] : md["labels"].items()) {
      for (const auto& msg : IsQualifiedName(key)) invalid("metadata.labels", key, msg);
      if (!v.is_string()) continue;
      const std::string value = v.get<std::string>();
      for (const auto& msg : IsValidLabelValue(value)) invalid("metadata.labels", value, msg);
    }
  }
  if (md.contains("annotations") && md["annotations"].is_object()) {
    size_t total = 0;
    for (const auto& [key, v] : md["annotations"].items()) {
      // The rule is a qualified name except that case does not matter.
      for (const auto& msg : IsQualifiedName(Lower(key))) invalid("metadata.annotations", key, msg);
      total += key.size() + (v.is_string() ? v.get_ref<const std::string&>().size() : 0);
    }
    if (total > kTotalAnnotationSizeLimit) {
      errs.push_back({"FieldValueTooLong", "metadata.annotations",
                      "Too long: may not be more than " +
                          std::to_string(kTotalAnnotationSizeLimit) + " bytes"});
    }
  }
  return errs;
}

}  // namespace perfgate::kubesim
