#include "kube/errors.h"

#include <gtest/gtest.h>

namespace hb::kube {
namespace {

TEST(Errors, StatusCodesMapToKinds) {
  struct Case {
    int code;
    std::string reason;
    ErrorKind kind;
  };
  for (const auto& c : std::vector<Case>{{404, "NotFound", ErrorKind::kNotFound},
                                         {409, "Conflict", ErrorKind::kConflict},
                                         {409, "AlreadyExists", ErrorKind::kAlreadyExists},
                                         {410, "Expired", ErrorKind::kGone},
                                         {410, "Gone", ErrorKind::kGone},
                                         {422, "Invalid", ErrorKind::kInvalid},
                                         {403, "Forbidden", ErrorKind::kForbidden},
                                         {401, "Unauthorized", ErrorKind::kUnauthorized},
                                         {429, "TooManyRequests", ErrorKind::kTooManyRequests},
                                         {503, "ServiceUnavailable", ErrorKind::kServerError},
                                         {500, "InternalError", ErrorKind::kServerError},
                                         {400, "BadRequest", ErrorKind::kBadRequest}}) {
    nlohmann::json status = {{"kind", "Status"},
                             {"status", "Failure"},
                             {"code", c.code},
                             {"reason", c.reason},
                             {"message", "m"}};
    ApiError e{error_from_response(c.code, "", status.dump(), "get x")};
    EXPECT_EQ(e.kind(), c.kind) << c.code << " " << c.reason;
    EXPECT_EQ(e.code(), c.code);
  }
}

TEST(Errors, InvalidCarriesFieldCausesAndServerMessage) {
  std::string body = R"({"kind":"Status","apiVersion":"v1","status":"Failure",
    "message":"Agent.heartbeat.dev \"a\" is invalid: spec.heartbeat.interval: Invalid value: \"5x\": spec.heartbeat.interval in body should match '^...$'",
    "reason":"Invalid","details":{"name":"a","group":"heartbeat.dev","kind":"Agent",
    "causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \"5x\"","field":"spec.heartbeat.interval"},
              {"reason":"FieldValueRequired","message":"Required value","field":"spec.model"}]},"code":422})";
  ApiError e{error_from_response(422, "", body, "create heartbeat.dev agents default/a")};
  EXPECT_EQ(e.kind(), ErrorKind::kInvalid);
  ASSERT_EQ(e.causes().size(), 2u);
  EXPECT_EQ(e.causes()[0].field, "spec.heartbeat.interval");
  EXPECT_EQ(e.causes()[1].reason, "FieldValueRequired");
  std::string what = e.what();
  EXPECT_NE(what.find("create heartbeat.dev agents default/a: 422"), std::string::npos) << what;
  EXPECT_NE(what.find("spec.heartbeat.interval"), std::string::npos);
  // A cause the message left out is appended, so nothing the server said is lost.
  EXPECT_NE(what.find("spec.model: Required value"), std::string::npos) << what;
}

TEST(Errors, RetryAfterFromHeaderOrDetails) {
  std::string body =
      R"({"kind":"Status","code":429,"reason":"TooManyRequests","message":"slow down"})";
  EXPECT_EQ(error_from_response(429, "7", body, "x").retry_after_seconds, 7);
  EXPECT_TRUE(error_from_response(429, "7", body, "x").transient());
  std::string with_details =
      R"({"kind":"Status","code":500,"message":"etcd","details":{"retryAfterSeconds":2}})";
  EXPECT_EQ(error_from_response(500, "", with_details, "x").retry_after_seconds, 2);
  EXPECT_FALSE(
      error_from_response(500, "Wed, 21 Oct 2015 07:28:00 GMT", "oops", "x").retry_after_seconds);
  // Not a count of seconds: no Retry-After at all.
  for (const char* header : {"-1", "5s", "99999999999", "1.5"}) {
    EXPECT_FALSE(error_from_response(429, header, body, "x").retry_after_seconds) << header;
  }
}

TEST(Errors, NonStatusBodyKeptAsExcerpt) {
  ApiError e{error_from_response(502, "", "<html>bad gateway</html>", "list pods")};
  EXPECT_EQ(e.kind(), ErrorKind::kServerError);
  EXPECT_NE(std::string(e.what()).find("bad gateway"), std::string::npos);
  ApiError empty{error_from_response(404, "", "", "get x")};
  EXPECT_EQ(empty.kind(), ErrorKind::kNotFound);
  EXPECT_NE(std::string(empty.what()).find("(empty body)"), std::string::npos);
}

TEST(Errors, StatusInsideWatchStream) {
  nlohmann::json status = {{"kind", "Status"},
                           {"code", 410},
                           {"reason", "Expired"},
                           {"message", "too old resource version: 5 (20)"}};
  ApiError e{error_from_status(status, "watch agents")};
  EXPECT_EQ(e.kind(), ErrorKind::kGone);
  EXPECT_NE(std::string(e.what()).find("too old resource version"), std::string::npos);
}

}  // namespace
}  // namespace hb::kube
