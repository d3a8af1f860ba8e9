// kube-sim's CEL subset: what the admission policies of the chart and of users rely on.
#include "tests/kube-sim/cel.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace perfgate::kubesim::cel {
namespace {

using ::testing::HasSubstr;

Result<Json> Eval(const std::string& expr, Program::Env env = {}) {
  ASSIGN_OR_RETURN(auto p, Program::Compile(expr));
  return p.Evaluate(env);
}

Program::Env WithObject(const Json& object) {
  Program::Env env;
  env.vars["object"] = object;
  env.vars["oldObject"] = nullptr;
  return env;
}

TEST(Cel, LiteralsOperatorsAndPrecedence) {
  EXPECT_EQ(*Eval("1 + 2 * 3"), 7);
  EXPECT_EQ(*Eval("(1 + 2) * 3 % 4"), 1);
  EXPECT_EQ(*Eval("-7 / 2"), -3);  // truncation, as CEL
  EXPECT_EQ(*Eval("'a' + \"b\" + 'c\\'d'"), "abc'd");
  EXPECT_EQ(*Eval("[1, 2] + [3]"), Json::array({1, 2, 3}));
  EXPECT_EQ(*Eval("{'k': 1}['k']"), 1);
  EXPECT_EQ(*Eval("1 == 1.0 && 2 != 3 && 'a' < 'b' && 2 >= 2"), true);
  EXPECT_EQ(*Eval("!true || false ? 'yes' : 'no'"), "no");
  EXPECT_EQ(*Eval("true ? 1 : false ? 2 : 3"), 1);
  EXPECT_EQ(*Eval("null == null"), true);
}

TEST(Cel, FieldsHasAndMissingKeys) {
  auto env = WithObject({{"spec", {{"nodeName", "node-0"}}}, {"metadata", {{"name", "x"}}}});
  EXPECT_EQ(*Eval("object.spec.nodeName", env), "node-0");
  EXPECT_EQ(*Eval("has(object.spec) && has(object.spec.nodeName)", env), true);
  EXPECT_EQ(*Eval("has(object.metadata.labels)", env), false);
  // Selecting a missing field is an error; has() is how a policy avoids it.
  auto missing = Eval("object.metadata.labels", env);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("no such key: labels"));
  // The && and || of CEL: the side that decides wins over an error on the other side.
  EXPECT_EQ(*Eval("has(object.metadata.labels) && object.metadata.labels['a'] == 'b'", env), false);
  EXPECT_EQ(*Eval("object.metadata.labels['a'] == 'b' && false", env), false);
  EXPECT_EQ(*Eval("object.metadata.labels['a'] == 'b' || true", env), true);
  EXPECT_FALSE(Eval("object.metadata.labels['a'] == 'b' || false", env).ok());
  // oldObject is null on CREATE: selecting from it is an error, not a silent false.
  EXPECT_FALSE(Eval("oldObject.spec", env).ok());
  EXPECT_FALSE(Eval("nope", env).ok());
}

TEST(Cel, InSizeStringsAndMacros) {
  Program::Env env;
  env.vars["request"] = {{"userInfo",
                          {{"username", "system:serviceaccount:ns:worker"},
                           {"extra", {{"authentication.kubernetes.io/node-name", {"node-3"}}}}}}};
  EXPECT_EQ(*Eval("'authentication.kubernetes.io/node-name' in request.userInfo.extra", env), true);
  EXPECT_EQ(*Eval("size(request.userInfo.extra['authentication.kubernetes.io/node-name']) == 1 "
                  "? request.userInfo.extra['authentication.kubernetes.io/node-name'][0] : ''",
                  env),
            "node-3");
  EXPECT_EQ(*Eval("request.userInfo.username.startsWith('system:serviceaccount:')", env), true);
  EXPECT_EQ(*Eval("request.userInfo.username.endsWith(':worker') && "
                  "request.userInfo.username.contains(':ns:')",
                  env),
            true);
  EXPECT_EQ(*Eval("'node-12'.matches('^node-[0-9]+$')", env), true);
  EXPECT_EQ(*Eval("size('héllo') == 5 && 'héllo'.size() == 5"), true);  // code points
  EXPECT_EQ(*Eval("2 in [1, 2, 3] && !(4 in [1, 2, 3])"), true);
  EXPECT_EQ(*Eval("[1, 2, 3].all(x, x > 0) && [1, 2, 3].exists(x, x == 2)"), true);
  EXPECT_EQ(*Eval("[1, 2, 3].exists_one(x, x > 1)"), false);
  EXPECT_EQ(*Eval("{'a': 1, 'b': 2}.all(k, k in ['a', 'b'])"), true);
  EXPECT_EQ(*Eval("int('42') + 1 == 43 && string(7) == '7'"), true);
}

TEST(Cel, VariablesAreEvaluatedWhenUsed) {
  int calls = 0;
  Program::Env env;
  env.variable = [&](const std::string& name) -> Result<Json> {
    ++calls;
    if (name == "tokenNode") return Json("node-1");
    return InvalidArgument("undefined variable '" + name + "'");
  };
  EXPECT_EQ(*Eval("variables.tokenNode == 'node-1'", env), true);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(*Eval("true || variables.other", env), true);
  EXPECT_EQ(calls, 1);  // the left side decided
  auto bad = Eval("variables.other == ''", env);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("undefined variable 'other'"));
}

TEST(Cel, TypeErrorsAndSyntaxErrorsAreNamed) {
  auto mixed = Eval("'a' + 1");
  ASSERT_FALSE(mixed.ok());
  EXPECT_THAT(mixed.status().message(), HasSubstr("no such overload: +(string, int)"));
  EXPECT_FALSE(Eval("1 ? 2 : 3").ok());
  EXPECT_FALSE(Eval("[1][5]").ok());
  EXPECT_FALSE(Eval("1 / 0").ok());
  auto syntax = Program::Compile("object.spec.nodeName == ");
  ASSERT_FALSE(syntax.ok());
  EXPECT_THAT(syntax.status().message(), HasSubstr("unexpected end of expression at position 24"));
  auto unterminated = Program::Compile("'abc");
  ASSERT_FALSE(unterminated.ok());
  EXPECT_THAT(unterminated.status().message(), HasSubstr("unterminated string"));
  auto has = Program::Compile("has(object)");
  ASSERT_FALSE(has.ok());
  EXPECT_THAT(has.status().message(), HasSubstr("has() takes one field selection"));
}

}  // namespace
}  // namespace perfgate::kubesim::cel
