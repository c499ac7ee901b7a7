// The JSON subset reader: string escapes, surrogate pairs, skipped values of
// every kind, and the JSONL "text" field outcomes cmpi-data reports.
#include <gtest/gtest.h>

#include "data/json_reader.h"

namespace cmpi::data {
namespace {

TEST(JsonReader, DecodesEscapesAndSurrogatePairs) {
  JsonCursor cursor(R"("a\"b\\c\/\n\t\u00e9\ud83d\ude00\u0120")");
  EXPECT_EQ(cursor.read_string(), "a\"b\\c/\n\t\xC3\xA9\xF0\x9F\x98\x80\xC4\xA0");
  EXPECT_TRUE(cursor.at_end());
}

TEST(JsonReader, RejectsBrokenStrings) {
  for (const char* bad :
       {R"("abc)", R"("\x")", R"("\ud83d")", R"("\ude00")", R"("\u12")", "\"a\nb\""}) {
    JsonCursor cursor(bad);
    EXPECT_THROW(cursor.read_string(), JsonError) << bad;
  }
}

TEST(JsonReader, JsonlTextField) {
  std::string text;
  EXPECT_EQ(read_jsonl_text(R"({"id": 3, "meta": {"a": [1, 2.5e3, null, true, {}]}, "text": "hi"})",
                            text),
            JsonTextField::kFound);
  EXPECT_EQ(text, "hi");
  EXPECT_EQ(read_jsonl_text(R"({"title": "x"})", text), JsonTextField::kMissing);
  EXPECT_EQ(read_jsonl_text(R"({})", text), JsonTextField::kMissing);
  EXPECT_EQ(read_jsonl_text(R"({"text": 5})", text), JsonTextField::kNotAString);
  EXPECT_EQ(read_jsonl_text(R"({"text": ["a"]})", text), JsonTextField::kNotAString);
  EXPECT_EQ(read_jsonl_text(R"({"text": "a", "text": "b"})", text), JsonTextField::kFound);
  EXPECT_EQ(text, "b");
}

TEST(JsonReader, JsonlLineThatIsNotAnObject) {
  std::string text;
  for (const char* bad : {"", "[1]", "\"text\"", "{\"text\": \"a\"", "{\"text\": \"a\"} x",
                          "{'text': 'a'}", "{\"text\" \"a\"}", "{\"a\": tru}"}) {
    EXPECT_THROW(read_jsonl_text(bad, text), JsonError) << bad;
  }
}

TEST(JsonReader, Integers) {
  JsonCursor cursor("[12, -7, 1.5]");
  cursor.expect('[', "[");
  EXPECT_EQ(cursor.read_integer(), 12);
  cursor.expect(',', ",");
  EXPECT_EQ(cursor.read_integer(), -7);
  cursor.expect(',', ",");
  EXPECT_THROW(cursor.read_integer(), JsonError);
}

}  // namespace
}  // namespace cmpi::data
