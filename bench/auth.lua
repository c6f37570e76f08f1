-- wrk script: GET with the bearer token from the environment.
wrk.headers["Authorization"] = "Bearer " .. os.getenv("AT_TOKEN")
