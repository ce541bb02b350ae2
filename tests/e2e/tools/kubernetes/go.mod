// The pulumi-kubernetes provider for the real-engine run (tests/e2e), built by scripts/e2e.
// The Go module proxy serves one version of github.com/pulumi/pulumi-kubernetes/provider/v4 (the module has no
// tags of its own): the pseudo-version of commit f47bc2d6f199, the commit tagged v4.25.0 (2026-01-14). The Python
// SDK is pinned at 4.34.2; the engine runs this provider whatever version the SDK asks for, because scripts/e2e puts
// it on PATH (README "Verified" says so). Its go.mod replaces sdk/v4 with ../sdk, a path a module download lacks: the
// same release, sdk/v4 v4.25.0, is required instead. Its main package embeds schema-embed.json and
// terraform-mapping-embed.json, which `go generate` writes and the module zip lacks: scripts/e2e copies the module,
// writes the two files from schema.json / terraform-mapping.json beside them, and replaces the module with the copy.
module vllm-platform/e2e/kubernetes

go 1.24.7

require (
	github.com/pulumi/pulumi-kubernetes/provider/v4 v4.0.0-20260115033456-f47bc2d6f199
	github.com/pulumi/pulumi-kubernetes/sdk/v4 v4.25.0
)
