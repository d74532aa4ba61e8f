// Stop strings: hold-back of possible stop-string prefixes, earliest match wins, stop text dropped.
#include "sample/stop.h"

#include <gtest/gtest.h>

#include "core/error.h"

using ignis::sample::StopMatcher;

TEST(Stop, NoStopStringsPassThrough) {
  StopMatcher m({});
  EXPECT_EQ(m.push("abc"), "abc");
  EXPECT_EQ(m.flush(), "");
  EXPECT_FALSE(m.stopped());
}

TEST(Stop, PrefixIsHeldUntilTheStopCompletes) {
  StopMatcher m({"\nUser:"});
  EXPECT_EQ(m.push("Hello"), "Hello");
  EXPECT_EQ(m.push(" wor"), " wor");
  EXPECT_EQ(m.push("ld\n"), "ld");  // "\n" may start "\nUser:"
  EXPECT_EQ(m.held(), 1u);
  EXPECT_EQ(m.push("Us"), "");
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.push("er: more"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), "\nUser:");
  EXPECT_EQ(m.push("after"), "");
  EXPECT_EQ(m.flush(), "");
}

TEST(Stop, HeldTextIsReleasedWhenDisproved) {
  StopMatcher m({"abc"});
  EXPECT_EQ(m.push("xab"), "x");
  EXPECT_EQ(m.push("d"), "abd");
  EXPECT_EQ(m.push("ab"), "");
  EXPECT_EQ(m.flush(), "ab");  // generation ended without the stop: held text comes out
  EXPECT_FALSE(m.stopped());
}

TEST(Stop, TextBeforeTheStopInTheSamePieceIsKept) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.push("one two END three"), "one two ");
  EXPECT_TRUE(m.stopped());
}

TEST(Stop, EarliestStopWins) {
  StopMatcher m({"cd", "bcde"});
  EXPECT_EQ(m.push("abcdef"), "a");
  EXPECT_EQ(m.matched(), "bcde");
}

TEST(Stop, LongestPossiblePrefixIsHeld) {
  // "aab" could start "aab!" at offset 0 and "ab!" ... both are held from the earliest start.
  StopMatcher m({"aab!", "b?"});
  EXPECT_EQ(m.push("xaab"), "x");
  EXPECT_EQ(m.push("?"), "aa");  // "b?" completes first at offset 2 of the held text
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), "b?");
}

TEST(Stop, HeldTextIsWholeUtf8Characters) {
  StopMatcher m({"\xc3\xa9!"});          // "é!"
  EXPECT_EQ(m.push("caf\xc3\xa9"), "caf");  // "café": the whole "é" is held
  EXPECT_EQ(m.push("?"), "\xc3\xa9?");
}

TEST(Stop, RejectsEmptyAndInvalidStopStrings) {
  EXPECT_THROW(StopMatcher({""}), ignis::Error);
  EXPECT_THROW(StopMatcher({"\xc3"}), ignis::Error);
  EXPECT_THROW(StopMatcher({"\xed\xa0\x80"}), ignis::Error);  // surrogate
}
