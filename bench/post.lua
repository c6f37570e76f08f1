-- wrk script: POST a small note. The token comes from the environment.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("AT_TOKEN")
wrk.body = '{"data": {"text": "benchmark note", "n": 42, "tags": ["a", "b"]}}'
