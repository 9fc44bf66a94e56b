"""Rate-limit answers of the scripted model: HTTP 429 with the headers and
bodies each provider sends (a script's top-level `"rate_limit":
{"reset_s": N}` makes every model request get one).

Anthropic (docs.anthropic.com, "Rate limits" and "Errors"): status 429,
`{"type": "error", "error": {"type": "rate_limit_error", "message": …}}`,
`retry-after` in seconds and the `anthropic-ratelimit-{requests,tokens,
input-tokens,output-tokens}-{limit,remaining,reset}` headers (reset as RFC
3339). OpenAI (platform.openai.com, "Rate limits" and "Error codes"):
status 429, `{"error": {"message": …, "type": "requests" | "tokens",
"param": null, "code": "rate_limit_exceeded"}}`, `retry-after` and the
`x-ratelimit-{limit,remaining,reset}-{requests,tokens}` headers (reset as
a duration like `20s`). Gemini (ai.google.dev, "Rate limits" and "Troubleshooting"): status 429,
`{"error": {"code": 429, "message": "You exceeded your current quota …
Please retry in Ns.", "status": "RESOURCE_EXHAUSTED", "details":
[QuotaFailure, Help, RetryInfo {"retryDelay": "Ns"}]}}`.

The reset time is the one clock the server reads (it has to say when).
"""

import json
import time


def _rfc3339(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def answer(api, reset_s, kind="requests"):
    """(headers, body) of a 429 for `api` (anthropic, responses, chat,
    gemini), the limit resetting in `reset_s` seconds."""
    reset_s = int(reset_s)
    if api == "anthropic":
        reset = _rfc3339(time.time() + reset_s)
        headers = {"retry-after": str(reset_s), "request-id": "req_owt_rate_limited",
                   "x-should-retry": "true"}
        for which in ("requests", "tokens", "input-tokens", "output-tokens"):
            headers[f"anthropic-ratelimit-{which}-limit"] = "50" if which == "requests" else "40000"
            headers[f"anthropic-ratelimit-{which}-remaining"] = "0"
            headers[f"anthropic-ratelimit-{which}-reset"] = reset
        body = {"type": "error", "error": {
            "type": "rate_limit_error",
            "message": "This request would exceed the rate limit for your organization "
                       "(owt-test) of 50 requests per minute. For details, refer to: "
                       "https://docs.claude.com/en/api/rate-limits."}}
        return headers, body
    if api in ("responses", "chat"):
        headers = {"retry-after": str(reset_s), "x-request-id": "req_owt_rate_limited",
                   "x-ratelimit-limit-requests": "3", "x-ratelimit-remaining-requests": "0",
                   "x-ratelimit-reset-requests": f"{reset_s}s",
                   "x-ratelimit-limit-tokens": "40000", "x-ratelimit-remaining-tokens": "0",
                   "x-ratelimit-reset-tokens": f"{reset_s}s"}
        unit = "requests per min (RPM)" if kind == "requests" else "tokens per min (TPM)"
        body = {"error": {
            "message": f"Rate limit reached for mock-model in organization org-owt-test on {unit}: "
                       f"Limit 3, Used 3, Requested 1. Please try again in {reset_s}s.",
            "type": kind, "param": None, "code": "rate_limit_exceeded"}}
        return headers, body
    # The Gemini API's own (generativelanguage.googleapis.com): the
    # message names the quota and when to retry, and the details say it
    # again for clients (QuotaFailure, Help, RetryInfo).
    metric = "generativelanguage.googleapis.com/generate_content_free_tier_requests"
    headers = {"retry-after": str(reset_s)}
    body = {"error": {
        "code": 429,
        "message": "You exceeded your current quota, please check your plan and billing "
                   "details. For more information on this error, head to: "
                   "https://ai.google.dev/gemini-api/docs/rate-limits.\n"
                   f"* Quota exceeded for metric: {metric}, limit: 10, model: mock-model\n"
                   f"Please retry in {reset_s}s.",
        "status": "RESOURCE_EXHAUSTED",
        "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{
                "quotaMetric": metric,
                "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                "quotaDimensions": {"location": "global", "model": "mock-model"},
                "quotaValue": "10"}]},
            {"@type": "type.googleapis.com/google.rpc.Help", "links": [{
                "description": "Learn more about Gemini API quotas",
                "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{reset_s}s"}]}}
    return headers, body


def send(handler, api, reset_s):
    """Answers the request `handler` serves with a 429."""
    headers, body = answer(api, reset_s)
    data = json.dumps(body).encode()
    handler.send_response(429)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for k, v in headers.items():
        handler.send_header(k, v)
    handler.end_headers()
    handler.wfile.write(data)
