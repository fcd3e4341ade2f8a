module github.com/drovehq/drove

go 1.24.0
