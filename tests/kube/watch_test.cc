#include "kube/watch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace perfgate::kube {
namespace {

using ::testing::HasSubstr;

std::string Event(const std::string& type, const std::string& name, const std::string& rv,
                  const std::string& extra = "") {
  return R"({"type":")" + type + R"(","object":{"kind":"Pod","metadata":{"name":")" + name +
         R"(","resourceVersion":")" + rv + R"("})" + extra + "}}\n";
}

struct Collected {
  std::vector<std::string> names;
  std::vector<WatchEventType> types;
  WatchEventCallback Sink() {
    return [this](WatchEvent&& e) {
      types.push_back(e.type);
      names.push_back(e.object.value("metadata", Json::object()).value("name", ""));
      return Status::Ok();
    };
  }
};

// Events whose text holds the characters a naive splitter trips on: braces and
// an escaped newline inside strings, multi-byte UTF-8.
std::string ThreeEvents() {
  return Event("ADDED", "a", "1", R"(,"data":{"x":"}{\n\"quoted\""})") +
         Event("MODIFIED", "b\u00e9", "2", R"(,"spec":{"nodeName":"gpu-\u00fc-1"})") +
         Event("DELETED", "c", "3");
}

TEST(WatchDecoderTest, AnEventSplitAtEveryByteOffsetDecodesTheSame) {
  const std::string stream = ThreeEvents();
  for (size_t split = 0; split <= stream.size(); ++split) {
    WatchDecoder decoder;
    Collected got;
    ASSERT_TRUE(decoder.Feed(std::string_view(stream).substr(0, split), got.Sink()).ok());
    ASSERT_TRUE(decoder.Feed(std::string_view(stream).substr(split), got.Sink()).ok());
    ASSERT_TRUE(decoder.Finish(got.Sink()).ok());
    ASSERT_EQ(got.names, (std::vector<std::string>{"a", "b\u00e9", "c"})) << "split " << split;
    EXPECT_EQ(got.types,
              (std::vector<WatchEventType>{WatchEventType::kAdded, WatchEventType::kModified,
                                           WatchEventType::kDeleted}));
    EXPECT_EQ(decoder.buffered_bytes(), 0u);
  }
}

TEST(WatchDecoderTest, OneByteAtATime) {
  const std::string stream = ThreeEvents();
  WatchDecoder decoder;
  Collected got;
  for (char c : stream) ASSERT_TRUE(decoder.Feed(std::string_view(&c, 1), got.Sink()).ok());
  EXPECT_EQ(got.names.size(), 3u);
}

TEST(WatchDecoderTest, SeveralEventsInOneChunkAndALastOneWithoutNewline) {
  std::string stream = ThreeEvents() + Event("BOOKMARK", "", "9");
  stream.pop_back();  // the last event lacks its newline
  WatchDecoder decoder;
  Collected got;
  ASSERT_TRUE(decoder.Feed(stream, got.Sink()).ok());
  EXPECT_EQ(got.names.size(),
            3u);  // the bookmark waits for its newline or the end
  ASSERT_TRUE(decoder.Finish(got.Sink()).ok());
  ASSERT_EQ(got.types.size(), 4u);
  EXPECT_EQ(got.types[3], WatchEventType::kBookmark);
}

TEST(WatchDecoderTest, GarbageIsDataLossNamingTheText) {
  WatchDecoder decoder;
  Collected got;
  Status s = decoder.Feed("{\"type\":\"ADDED\",\"object\":{}}\nnot json\n", got.Sink());
  EXPECT_EQ(s.code(), Code::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("not json"));
  EXPECT_EQ(got.names.size(), 1u);
  EXPECT_EQ(ParseWatchEvent(R"({"type":"EXPLODED","object":{}})").status().code(), Code::kDataLoss);
}

TEST(WatchDecoderTest, AnErrorFromTheSinkStopsDecoding) {
  WatchDecoder decoder;
  int calls = 0;
  Status s = decoder.Feed(ThreeEvents(), [&](WatchEvent&&) {
    ++calls;
    return Status(Code::kAborted, "enough");
  });
  EXPECT_EQ(s.code(), Code::kAborted);
  EXPECT_EQ(calls, 1);
}

TEST(BackoffTest, GrowsFromPointEightSecondsToThirtyAndResets) {
  Backoff::Options o;
  o.jitter = 0;
  Backoff b(o, 1);
  std::vector<int64_t> ms;
  for (int i = 0; i < 8; ++i) ms.push_back(b.Next().count());
  EXPECT_EQ(ms, (std::vector<int64_t>{800, 1600, 3200, 6400, 12800, 25600, 30000, 30000}));
  b.Reset();
  EXPECT_EQ(b.Next().count(), 800);
}

TEST(BackoffTest, JitterStaysWithinOneStepAndUnderTheCap) {
  Backoff b(Backoff::Options{}, 42);
  int64_t base = 800;
  bool varied = false;
  int64_t first = -1;
  for (int i = 0; i < 12; ++i) {
    int64_t d = b.Next().count();
    EXPECT_GE(d, std::min<int64_t>(base, 30000));
    EXPECT_LE(d, std::min<int64_t>(2 * base, 30000));
    if (first < 0) first = d;
    base = std::min<int64_t>(base * 2, 30000);
  }
  // Two backoffs with different seeds do not march in step (the point of
  // jitter).
  Backoff a(Backoff::Options{}, 1), c(Backoff::Options{}, 2);
  for (int i = 0; i < 4; ++i) varied |= a.Next() != c.Next();
  EXPECT_TRUE(varied);
}

}  // namespace
}  // namespace perfgate::kube
