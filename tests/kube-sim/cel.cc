#include "tests/kube-sim/cel.h"

#include <cctype>
#include <cmath>
#include <optional>
#include <regex>
#include <utility>
#include <vector>

namespace perfgate::kubesim::cel {

enum class Kind {
  kLiteral,
  kIdent,
  kSelect,  // operand.field; `test` for has(operand.field)
  kIndex,
  kCall,  // name(args) or target.name(args)
  kUnary,
  kBinary,
  kCond,
  kList,
  kMap,
  kComprehension,  // range.all|exists|exists_one(var, predicate)
};

struct Node {
  Kind kind = Kind::kLiteral;
  Json value;        // literal
  std::string name;  // ident, field, function, operator, macro
  std::string var;   // comprehension variable
  bool test = false;
  std::vector<std::shared_ptr<const Node>> kids;  // operands, args (target first), elements
};

namespace {

using NodePtr = std::shared_ptr<const Node>;

struct Token {
  enum Type { kEnd, kIdent, kInt, kDouble, kString, kOp } type = kEnd;
  std::string text;
  Json value;
  size_t pos = 0;
};

Result<std::vector<Token>> Lex(const std::string& s) {
  std::vector<Token> out;
  size_t i = 0;
  auto error = [&](const std::string& what) {
    return InvalidArgument("CEL: " + what + " at position " + std::to_string(i));
  };
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      ++i;
      continue;
    }
    Token t;
    t.pos = i;
    if (std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) != 0 || s[j] == '_'))
        ++j;
      t.type = Token::kIdent;
      t.text = s.substr(i, j - i);
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c)) != 0) {
      size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])) != 0) ++j;
      bool is_double = false;
      if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
        is_double = true;
        ++j;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])) != 0) ++j;
      }
      const std::string text = s.substr(i, j - i);
      if (j < s.size() && (s[j] == 'u' || s[j] == 'U')) ++j;  // uint: treated as int
      t.type = is_double ? Token::kDouble : Token::kInt;
      t.value = is_double ? Json(std::stod(text)) : Json(std::stoll(text));
      i = j;
    } else if (c == '\'' || c == '"') {
      std::string v;
      size_t j = i + 1;
      for (; j < s.size() && s[j] != c; ++j) {
        if (s[j] != '\\') {
          v.push_back(s[j]);
          continue;
        }
        if (++j >= s.size()) break;
        switch (s[j]) {
          case 'n':
            v.push_back('\n');
            break;
          case 't':
            v.push_back('\t');
            break;
          case 'r':
            v.push_back('\r');
            break;
          default:
            v.push_back(s[j]);  // \\ \' \" and anything else as itself
        }
      }
      if (j >= s.size()) return error("unterminated string");
      t.type = Token::kString;
      t.value = v;
      i = j + 1;
    } else {
      static const char* kOps[] = {"==", "!=", "<=", ">=", "&&", "||", "<", ">",
                                   "!",  "+",  "-",  "*",  "/",  "%",  "?", ":",
                                   "(",  ")",  "[",  "]",  "{",  "}",  ".", ","};
      bool found = false;
      for (const char* op : kOps) {
        const size_t n = std::char_traits<char>::length(op);
        if (s.compare(i, n, op) == 0) {
          t.type = Token::kOp;
          t.text = op;
          i += n;
          found = true;
          break;
        }
      }
      if (!found) return error(std::string("unexpected character '") + c + "'");
    }
    out.push_back(std::move(t));
  }
  Token end;
  end.pos = s.size();
  out.push_back(end);
  return out;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  Result<NodePtr> ParseAll() {
    ASSIGN_OR_RETURN(NodePtr e, Expr());
    if (Peek().type != Token::kEnd) return Error("unexpected '" + Peek().text + "'");
    return e;
  }

 private:
  const Token& Peek() const { return t_[i_]; }
  bool IsOp(const char* op) const { return Peek().type == Token::kOp && Peek().text == op; }
  bool Accept(const char* op) {
    if (!IsOp(op)) return false;
    ++i_;
    return true;
  }
  Status Error(const std::string& what) const {
    return InvalidArgument("CEL: " + what + " at position " + std::to_string(Peek().pos));
  }
  Status Expect(const char* op) {
    if (Accept(op)) return Status::Ok();
    return Error(std::string("expected '") + op + "'");
  }
  static NodePtr Make(Kind k, std::string name, std::vector<NodePtr> kids) {
    auto n = std::make_shared<Node>();
    n->kind = k;
    n->name = std::move(name);
    n->kids = std::move(kids);
    return n;
  }

  Result<NodePtr> Expr() {
    ASSIGN_OR_RETURN(NodePtr c, Or());
    if (!Accept("?")) return c;
    ASSIGN_OR_RETURN(NodePtr a, Or());
    RETURN_IF_ERROR(Expect(":"));
    ASSIGN_OR_RETURN(NodePtr b, Expr());
    return Make(Kind::kCond, "", {c, a, b});
  }
  Result<NodePtr> Or() {
    ASSIGN_OR_RETURN(NodePtr l, And());
    while (Accept("||")) {
      ASSIGN_OR_RETURN(NodePtr r, And());
      l = Make(Kind::kBinary, "||", {l, r});
    }
    return l;
  }
  Result<NodePtr> And() {
    ASSIGN_OR_RETURN(NodePtr l, Relation());
    while (Accept("&&")) {
      ASSIGN_OR_RETURN(NodePtr r, Relation());
      l = Make(Kind::kBinary, "&&", {l, r});
    }
    return l;
  }
  Result<NodePtr> Relation() {
    ASSIGN_OR_RETURN(NodePtr l, Addition());
    for (;;) {
      std::string op;
      for (const char* o : {"==", "!=", "<=", ">=", "<", ">"}) {
        if (IsOp(o)) op = o;
      }
      if (op.empty() && Peek().type == Token::kIdent && Peek().text == "in") op = "in";
      if (op.empty()) return l;
      ++i_;
      ASSIGN_OR_RETURN(NodePtr r, Addition());
      l = Make(Kind::kBinary, op, {l, r});
    }
  }
  Result<NodePtr> Addition() {
    ASSIGN_OR_RETURN(NodePtr l, Multiplication());
    while (IsOp("+") || IsOp("-")) {
      const std::string op = t_[i_++].text;
      ASSIGN_OR_RETURN(NodePtr r, Multiplication());
      l = Make(Kind::kBinary, op, {l, r});
    }
    return l;
  }
  Result<NodePtr> Multiplication() {
    ASSIGN_OR_RETURN(NodePtr l, Unary());
    while (IsOp("*") || IsOp("/") || IsOp("%")) {
      const std::string op = t_[i_++].text;
      ASSIGN_OR_RETURN(NodePtr r, Unary());
      l = Make(Kind::kBinary, op, {l, r});
    }
    return l;
  }
  Result<NodePtr> Unary() {
    if (IsOp("!") || IsOp("-")) {
      const std::string op = t_[i_++].text;
      ASSIGN_OR_RETURN(NodePtr e, Unary());
      return Make(Kind::kUnary, op, {e});
    }
    return Member();
  }
  Result<std::vector<NodePtr>> Args(const char* close) {
    std::vector<NodePtr> args;
    if (Accept(close)) return args;
    for (;;) {
      ASSIGN_OR_RETURN(NodePtr a, Expr());
      args.push_back(a);
      if (Accept(close)) return args;
      RETURN_IF_ERROR(Expect(","));
    }
  }
  Result<NodePtr> Member() {
    ASSIGN_OR_RETURN(NodePtr e, Primary());
    for (;;) {
      if (Accept(".")) {
        if (Peek().type != Token::kIdent) return Error("expected a field name");
        const std::string field = t_[i_++].text;
        if (Accept("(")) {
          ASSIGN_OR_RETURN(auto args, Args(")"));
          if (field == "all" || field == "exists" || field == "exists_one") {
            if (args.size() != 2 || args[0]->kind != Kind::kIdent) {
              return Error(field + "() takes a variable name and a predicate");
            }
            auto n = std::make_shared<Node>();
            n->kind = Kind::kComprehension;
            n->name = field;
            n->var = args[0]->name;
            n->kids = {e, args[1]};
            e = n;
            continue;
          }
          args.insert(args.begin(), e);
          auto n = std::make_shared<Node>();
          n->kind = Kind::kCall;
          n->name = field;
          n->test = true;  // receiver-style call
          n->kids = std::move(args);
          e = n;
        } else {
          e = Make(Kind::kSelect, field, {e});
        }
      } else if (Accept("[")) {
        ASSIGN_OR_RETURN(NodePtr idx, Expr());
        RETURN_IF_ERROR(Expect("]"));
        e = Make(Kind::kIndex, "", {e, idx});
      } else {
        return e;
      }
    }
  }
  Result<NodePtr> Primary() {
    const Token& t = Peek();
    if (t.type == Token::kInt || t.type == Token::kDouble || t.type == Token::kString) {
      auto n = std::make_shared<Node>();
      n->kind = Kind::kLiteral;
      n->value = t.value;
      ++i_;
      return NodePtr(n);
    }
    if (t.type == Token::kIdent) {
      const std::string name = t.text;
      ++i_;
      if (name == "true" || name == "false" || name == "null") {
        auto n = std::make_shared<Node>();
        n->kind = Kind::kLiteral;
        n->value = name == "null" ? Json(nullptr) : Json(name == "true");
        return NodePtr(n);
      }
      if (Accept("(")) {
        ASSIGN_OR_RETURN(auto args, Args(")"));
        if (name == "has") {
          if (args.size() != 1 || args[0]->kind != Kind::kSelect) {
            return Error("has() takes one field selection, e.g. has(object.spec)");
          }
          auto n = std::make_shared<Node>(*args[0]);
          n->test = true;
          return NodePtr(n);
        }
        return Make(Kind::kCall, name, std::move(args));
      }
      return Make(Kind::kIdent, name, {});
    }
    if (Accept("(")) {
      ASSIGN_OR_RETURN(NodePtr e, Expr());
      RETURN_IF_ERROR(Expect(")"));
      return e;
    }
    if (Accept("[")) {
      ASSIGN_OR_RETURN(auto elems, Args("]"));
      return Make(Kind::kList, "", std::move(elems));
    }
    if (Accept("{")) {
      std::vector<NodePtr> kv;
      if (!Accept("}")) {
        for (;;) {
          ASSIGN_OR_RETURN(NodePtr k, Expr());
          RETURN_IF_ERROR(Expect(":"));
          ASSIGN_OR_RETURN(NodePtr v, Expr());
          kv.push_back(k);
          kv.push_back(v);
          if (Accept("}")) break;
          RETURN_IF_ERROR(Expect(","));
        }
      }
      return Make(Kind::kMap, "", std::move(kv));
    }
    return Error(t.type == Token::kEnd ? "unexpected end of expression"
                                       : "unexpected '" + t.text + "'");
  }

  std::vector<Token> t_;
  size_t i_ = 0;
};

std::string TypeName(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null_type";
    case Json::value_t::boolean:
      return "bool";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "int";
    case Json::value_t::number_float:
      return "double";
    case Json::value_t::string:
      return "string";
    case Json::value_t::array:
      return "list";
    default:
      return "map";
  }
}

Status NoOverload(const std::string& op, const Json& a, const Json* b = nullptr) {
  return InvalidArgument("no such overload: " + op + "(" + TypeName(a) +
                         (b != nullptr ? ", " + TypeName(*b) : "") + ")");
}

// Unicode code points, as CEL's size(string) counts.
int64_t CodePoints(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

class Evaluator {
 public:
  explicit Evaluator(const Program::Env& env) : env_(env) {}

  Result<Json> Eval(const Node& n) {
    switch (n.kind) {
      case Kind::kLiteral:
        return n.value;
      case Kind::kIdent: {
        for (auto it = locals_.rbegin(); it != locals_.rend(); ++it) {
          if (it->first == n.name) return it->second;
        }
        auto it = env_.vars.find(n.name);
        if (it == env_.vars.end())
          return InvalidArgument("undeclared reference to '" + n.name + "'");
        return it->second;
      }
      case Kind::kSelect:
        return Select(n);
      case Kind::kIndex: {
        ASSIGN_OR_RETURN(Json a, Eval(*n.kids[0]));
        ASSIGN_OR_RETURN(Json i, Eval(*n.kids[1]));
        if (a.is_array() && i.is_number_integer()) {
          const auto k = i.get<int64_t>();
          if (k < 0 || k >= static_cast<int64_t>(a.size())) {
            return InvalidArgument("index out of bounds: " + std::to_string(k));
          }
          return a[static_cast<size_t>(k)];
        }
        if (a.is_object() && i.is_string()) {
          auto it = a.find(i.get<std::string>());
          if (it == a.end()) return InvalidArgument("no such key: " + i.get<std::string>());
          return *it;
        }
        return NoOverload("_[_]", a, &i);
      }
      case Kind::kCall:
        return Call(n);
      case Kind::kUnary: {
        ASSIGN_OR_RETURN(Json v, Eval(*n.kids[0]));
        if (n.name == "!") {
          if (!v.is_boolean()) return NoOverload("!_", v);
          return Json(!v.get<bool>());
        }
        if (v.is_number_integer()) return Json(-v.get<int64_t>());
        if (v.is_number_float()) return Json(-v.get<double>());
        return NoOverload("-_", v);
      }
      case Kind::kBinary:
        return Binary(n);
      case Kind::kCond: {
        ASSIGN_OR_RETURN(Json c, Eval(*n.kids[0]));
        if (!c.is_boolean()) return NoOverload("_?_:_", c);
        return Eval(*n.kids[c.get<bool>() ? 1 : 2]);
      }
      case Kind::kList: {
        Json out = Json::array();
        for (const auto& k : n.kids) {
          ASSIGN_OR_RETURN(Json v, Eval(*k));
          out.push_back(std::move(v));
        }
        return out;
      }
      case Kind::kMap: {
        Json out = Json::object();
        for (size_t i = 0; i + 1 < n.kids.size(); i += 2) {
          ASSIGN_OR_RETURN(Json k, Eval(*n.kids[i]));
          ASSIGN_OR_RETURN(Json v, Eval(*n.kids[i + 1]));
          if (!k.is_string()) return InvalidArgument("unsupported map key type: " + TypeName(k));
          out[k.get<std::string>()] = std::move(v);
        }
        return out;
      }
      case Kind::kComprehension:
        return Comprehension(n);
    }
    return Internal("CEL: unknown node");
  }

 private:
  Result<Json> Select(const Node& n) {
    const Node& operand = *n.kids[0];
    if (operand.kind == Kind::kIdent && operand.name == "variables" && !n.test) {
      if (!env_.variable) return InvalidArgument("no variables are declared");
      return env_.variable(n.name);
    }
    ASSIGN_OR_RETURN(Json v, Eval(operand));
    if (!v.is_object()) {
      if (n.test) return NoOverload("has", v);
      return InvalidArgument(v.is_null() ? "no such key: " + n.name
                                         : "type '" + TypeName(v) +
                                               "' does not support field "
                                               "selection");
    }
    auto it = v.find(n.name);
    if (n.test) return Json(it != v.end());
    if (it == v.end()) return InvalidArgument("no such key: " + n.name);
    return *it;
  }

  Result<Json> Call(const Node& n) {
    std::vector<Json> args;
    for (const auto& k : n.kids) {
      ASSIGN_OR_RETURN(Json v, Eval(*k));
      args.push_back(std::move(v));
    }
    const std::string& f = n.name;
    if (f == "size" && args.size() == 1) {
      const Json& a = args[0];
      if (a.is_string()) return Json(CodePoints(a.get<std::string>()));
      if (a.is_array() || a.is_object()) return Json(static_cast<int64_t>(a.size()));
      return NoOverload("size", a);
    }
    if ((f == "startsWith" || f == "endsWith" || f == "contains" || f == "matches") &&
        args.size() == 2) {
      if (!args[0].is_string() || !args[1].is_string()) {
        return NoOverload(f, args[0], &args[1]);
      }
      const std::string s = args[0].get<std::string>();
      const std::string p = args[1].get<std::string>();
      if (f == "startsWith") return Json(s.rfind(p, 0) == 0);
      if (f == "endsWith")
        return Json(s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0);
      if (f == "contains") return Json(s.find(p) != std::string::npos);
      try {
        return Json(std::regex_search(s, std::regex(p, std::regex::ECMAScript)));
      } catch (const std::regex_error& e) {
        return InvalidArgument("invalid regular expression '" + p + "': " + e.what());
      }
    }
    if (f == "string" && args.size() == 1) {
      if (args[0].is_string()) return Json(args[0]);
      if (args[0].is_number() || args[0].is_boolean()) return Json(args[0].dump());
      return NoOverload("string", args[0]);
    }
    if (f == "int" && args.size() == 1) {
      if (args[0].is_number_integer()) return Json(args[0]);
      if (args[0].is_number_float()) return Json(static_cast<int64_t>(args[0].get<double>()));
      if (args[0].is_string()) {
        try {
          size_t used = 0;
          const int64_t v = std::stoll(args[0].get<std::string>(), &used);
          if (used == args[0].get<std::string>().size()) return Json(v);
        } catch (const std::exception&) {
        }
        return InvalidArgument("cannot convert '" + args[0].get<std::string>() + "' to int");
      }
      return NoOverload("int", args[0]);
    }
    return InvalidArgument("found no matching overload for '" + f + "' applied to " +
                           std::to_string(args.size()) + " argument(s)");
  }

  Result<Json> Binary(const Node& n) {
    const std::string& op = n.name;
    if (op == "&&" || op == "||") {
      // CEL's commutative logic: a side that decides the result wins over an error.
      const bool decisive = op == "||";
      auto l = Eval(*n.kids[0]);
      if (l.ok() && l->is_boolean() && l->get<bool>() == decisive) return Json(decisive);
      auto r = Eval(*n.kids[1]);
      if (r.ok() && r->is_boolean() && r->get<bool>() == decisive) return Json(decisive);
      if (!l.ok()) return l.status();
      if (!r.ok()) return r.status();
      if (!l->is_boolean() || !r->is_boolean()) return NoOverload(op, *l, &*r);
      return Json(!decisive);
    }
    ASSIGN_OR_RETURN(Json a, Eval(*n.kids[0]));
    ASSIGN_OR_RETURN(Json b, Eval(*n.kids[1]));
    if (op == "==") return Json(Equal(a, b));
    if (op == "!=") return Json(!Equal(a, b));
    if (op == "in") {
      if (b.is_object()) {
        if (!a.is_string()) return NoOverload("in", a, &b);
        return Json(b.contains(a.get<std::string>()));
      }
      if (b.is_array()) {
        for (const auto& e : b) {
          if (Equal(a, e)) return Json(true);
        }
        return Json(false);
      }
      return NoOverload("in", a, &b);
    }
    if (op == "<" || op == "<=" || op == ">" || op == ">=") {
      int cmp = 0;
      if (a.is_number() && b.is_number()) {
        const double x = a.get<double>(), y = b.get<double>();
        cmp = x < y ? -1 : x > y ? 1 : 0;
      } else if (a.is_string() && b.is_string()) {
        cmp = a.get<std::string>().compare(b.get<std::string>());
      } else if (a.is_boolean() && b.is_boolean()) {
        cmp = static_cast<int>(a.get<bool>()) - static_cast<int>(b.get<bool>());
      } else {
        return NoOverload(op, a, &b);
      }
      if (op == "<") return Json(cmp < 0);
      if (op == "<=") return Json(cmp <= 0);
      if (op == ">") return Json(cmp > 0);
      return Json(cmp >= 0);
    }
    if (op == "+") {
      if (a.is_string() && b.is_string()) return Json(a.get<std::string>() + b.get<std::string>());
      if (a.is_array() && b.is_array()) {
        Json out = a;
        for (const auto& e : b) out.push_back(e);
        return out;
      }
    }
    if (a.is_number_integer() && b.is_number_integer()) {
      const int64_t x = a.get<int64_t>(), y = b.get<int64_t>();
      if ((op == "/" || op == "%") && y == 0) return InvalidArgument("division by zero");
      if (op == "+") return Json(x + y);
      if (op == "-") return Json(x - y);
      if (op == "*") return Json(x * y);
      if (op == "/") return Json(x / y);
      return Json(x % y);
    }
    if (a.is_number_float() && b.is_number_float() && op != "%") {
      const double x = a.get<double>(), y = b.get<double>();
      if (op == "+") return Json(x + y);
      if (op == "-") return Json(x - y);
      if (op == "*") return Json(x * y);
      return Json(x / y);
    }
    return NoOverload(op, a, &b);
  }

  static bool Equal(const Json& a, const Json& b) {
    if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
    return a == b;
  }

  Result<Json> Comprehension(const Node& n) {
    ASSIGN_OR_RETURN(Json range, Eval(*n.kids[0]));
    std::vector<Json> items;
    if (range.is_array()) {
      items.assign(range.begin(), range.end());
    } else if (range.is_object()) {
      for (const auto& [k, v] : range.items()) items.emplace_back(k);
    } else {
      return NoOverload(n.name, range);
    }
    int64_t count = 0;
    std::optional<Status> error;
    for (const auto& item : items) {
      locals_.emplace_back(n.var, item);
      auto v = Eval(*n.kids[1]);
      locals_.pop_back();
      if (!v.ok()) {
        if (!error) error = v.status();
        continue;
      }
      if (!v->is_boolean()) return NoOverload(n.name, *v);
      const bool b = v->get<bool>();
      if (n.name == "all" && !b) return Json(false);
      if (n.name == "exists" && b) return Json(true);
      count += b ? 1 : 0;
    }
    if (error) return *error;
    if (n.name == "all") return Json(true);
    if (n.name == "exists") return Json(false);
    return Json(count == 1);
  }

  const Program::Env& env_;
  std::vector<std::pair<std::string, Json>> locals_;
};

}  // namespace

Result<Program> Program::Compile(const std::string& expression) {
  ASSIGN_OR_RETURN(auto tokens, Lex(expression));
  Parser parser(std::move(tokens));
  ASSIGN_OR_RETURN(NodePtr root, parser.ParseAll());
  Program p;
  p.root_ = root;
  return p;
}

Result<Json> Program::Evaluate(const Env& env) const {
  if (!root_) return Internal("CEL: empty program");
  Evaluator e(env);
  return e.Eval(*root_);
}

}  // namespace perfgate::kubesim::cel
