"""Stage 7, the results store (SQLite): runs, benches and results, and its verbs (`runs`,
`export`, `store`)."""

