// Decodes the few Kubernetes protobuf request bodies kubectl's typed commands send (create
// configmap/secret/namespace/serviceaccount/token, auth whoami, auth can-i). client-go in
// kubectl v1.32 does not fall back to JSON on a 415, so kube-sim reads these itself. Field
// numbers follow the generated.proto files of k8s.io/api (core/v1, authentication/v1,
// authorization/v1) and k8s.io/apimachinery (meta/v1, runtime).
#include <ctime>

#include "tests/kube-sim/internal.h"

namespace perfgate::kubesim {
namespace {

enum class K {
  kString,
  kBytes,
  kInt,
  kBool,
  kMessage,
  kMapString,
  kMapBytes,
  kRepString,
  kRepMessage,
  kTime
};
struct Schema;
struct FieldDef {
  int num;
  const char* name;
  K kind;
  const Schema* sub = nullptr;
};
struct Schema {
  std::vector<FieldDef> fields;
};

const Schema kTime{{}};
const Schema kOwnerRef{{{1, "kind", K::kString},
                        {3, "name", K::kString},
                        {4, "uid", K::kString},
                        {5, "apiVersion", K::kString},
                        {6, "controller", K::kBool},
                        {7, "blockOwnerDeletion", K::kBool}}};
const Schema kObjectMeta{{{1, "name", K::kString},
                          {2, "generateName", K::kString},
                          {3, "namespace", K::kString},
                          {5, "uid", K::kString},
                          {6, "resourceVersion", K::kString},
                          {7, "generation", K::kInt},
                          {11, "labels", K::kMapString},
                          {12, "annotations", K::kMapString},
                          {13, "ownerReferences", K::kRepMessage, &kOwnerRef},
                          {14, "finalizers", K::kRepString}}};
const Schema kConfigMap{{{1, "metadata", K::kMessage, &kObjectMeta},
                         {2, "data", K::kMapString},
                         {3, "binaryData", K::kMapBytes},
                         {4, "immutable", K::kBool}}};
const Schema kSecret{{{1, "metadata", K::kMessage, &kObjectMeta},
                      {2, "data", K::kMapBytes},
                      {3, "type", K::kString},
                      {4, "stringData", K::kMapString},
                      {5, "immutable", K::kBool}}};
const Schema kMetaOnly{{{1, "metadata", K::kMessage, &kObjectMeta}}};
const Schema kResourceAttributes{{{1, "namespace", K::kString},
                                  {2, "verb", K::kString},
                                  {3, "group", K::kString},
                                  {4, "version", K::kString},
                                  {5, "resource", K::kString},
                                  {6, "subresource", K::kString},
                                  {7, "name", K::kString}}};
const Schema kNonResourceAttributes{{{1, "path", K::kString}, {2, "verb", K::kString}}};
const Schema kSsarSpec{{{1, "resourceAttributes", K::kMessage, &kResourceAttributes},
                        {2, "nonResourceAttributes", K::kMessage, &kNonResourceAttributes}}};
const Schema kSsar{
    {{1, "metadata", K::kMessage, &kObjectMeta}, {2, "spec", K::kMessage, &kSsarSpec}}};
const Schema kBoundRef{{{1, "kind", K::kString},
                        {2, "apiVersion", K::kString},
                        {3, "name", K::kString},
                        {4, "uid", K::kString}}};
const Schema kTokenSpec{{{1, "audiences", K::kRepString},
                         {4, "expirationSeconds", K::kInt},
                         {3, "boundObjectRef", K::kMessage, &kBoundRef}}};
const Schema kTokenRequest{
    {{1, "metadata", K::kMessage, &kObjectMeta}, {2, "spec", K::kMessage, &kTokenSpec}}};

struct Reader {
  std::string_view buf;
  bool ok = true;
  bool Done() const { return buf.empty() || !ok; }
  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (buf.empty()) {
        ok = false;
        return 0;
      }
      auto b = static_cast<unsigned char>(buf.front());
      buf.remove_prefix(1);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    ok = false;
    return 0;
  }
  std::string_view Bytes() {
    uint64_t n = Varint();
    if (!ok || n > buf.size()) {
      ok = false;
      return {};
    }
    std::string_view out = buf.substr(0, n);
    buf.remove_prefix(n);
    return out;
  }
  void Skip(int wire) {
    if (wire == 0) {
      Varint();
    } else if (wire == 2) {
      Bytes();
    } else if (wire == 1 && buf.size() >= 8) {
      buf.remove_prefix(8);
    } else if (wire == 5 && buf.size() >= 4) {
      buf.remove_prefix(4);
    } else {
      ok = false;
    }
  }
};

std::pair<std::string, std::string> MapEntry(std::string_view entry) {
  Reader r{entry};
  std::pair<std::string, std::string> kv;
  while (!r.Done()) {
    uint64_t tag = r.Varint();
    int num = static_cast<int>(tag >> 3);
    int wire = static_cast<int>(tag & 7);
    if (wire == 2 && (num == 1 || num == 2)) {
      (num == 1 ? kv.first : kv.second) = std::string(r.Bytes());
    } else {
      r.Skip(wire);
    }
  }
  return kv;
}

Json Decode(std::string_view data, const Schema& schema, bool* ok) {
  Json out = Json::object();
  Reader r{data};
  while (!r.Done()) {
    uint64_t tag = r.Varint();
    int num = static_cast<int>(tag >> 3);
    int wire = static_cast<int>(tag & 7);
    const FieldDef* def = nullptr;
    for (const auto& f : schema.fields) {
      if (f.num == num) def = &f;
    }
    if (def == nullptr) {
      r.Skip(wire);
      continue;
    }
    switch (def->kind) {
      case K::kString:
        out[def->name] = std::string(r.Bytes());
        break;
      case K::kBytes:
        out[def->name] = Base64Encode(r.Bytes());
        break;
      case K::kInt:
        out[def->name] = static_cast<int64_t>(r.Varint());
        break;
      case K::kBool:
        out[def->name] = r.Varint() != 0;
        break;
      case K::kMessage:
        out[def->name] = Decode(r.Bytes(), *def->sub, ok);
        break;
      case K::kRepMessage:
        out[def->name].push_back(Decode(r.Bytes(), *def->sub, ok));
        break;
      case K::kRepString:
        out[def->name].push_back(std::string(r.Bytes()));
        break;
      case K::kMapString: {
        auto kv = MapEntry(r.Bytes());
        out[def->name][kv.first] = kv.second;
        break;
      }
      case K::kMapBytes: {
        auto kv = MapEntry(r.Bytes());
        out[def->name][kv.first] = Base64Encode(kv.second);
        break;
      }
      case K::kTime:
        r.Skip(wire);
        break;
    }
  }
  if (!r.ok) *ok = false;
  return out;
}

}  // namespace

Json DecodeKubeProtobuf(const std::string& body, bool* ok) {
  *ok = false;
  if (body.size() < 4 || body.compare(0, 4, std::string("k8s\0", 4)) != 0) return nullptr;
  // runtime.Unknown: typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2.
  Reader r{std::string_view(body).substr(4)};
  std::string apiVersion, kind;
  std::string_view raw;
  while (!r.Done()) {
    uint64_t tag = r.Varint();
    int num = static_cast<int>(tag >> 3);
    int wire = static_cast<int>(tag & 7);
    if (num == 1 && wire == 2) {
      Reader tm{r.Bytes()};
      while (!tm.Done()) {
        uint64_t t2 = tm.Varint();
        if ((t2 >> 3) == 1) {
          apiVersion = std::string(tm.Bytes());
        } else if ((t2 >> 3) == 2) {
          kind = std::string(tm.Bytes());
        } else {
          tm.Skip(static_cast<int>(t2 & 7));
        }
      }
    } else if (num == 2 && wire == 2) {
      raw = r.Bytes();
    } else {
      r.Skip(wire);
    }
  }
  const Schema* schema = nullptr;
  if (kind == "ConfigMap") schema = &kConfigMap;
  if (kind == "Secret") schema = &kSecret;
  if (kind == "Namespace" || kind == "ServiceAccount" || kind == "SelfSubjectReview")
    schema = &kMetaOnly;
  if (kind == "SelfSubjectAccessReview") schema = &kSsar;
  if (kind == "TokenRequest") schema = &kTokenRequest;
  if (schema == nullptr || !r.ok) return nullptr;
  *ok = true;
  Json obj = Decode(raw, *schema, ok);
  obj["apiVersion"] = apiVersion;
  obj["kind"] = kind;
  return obj;
}

}  // namespace perfgate::kubesim
