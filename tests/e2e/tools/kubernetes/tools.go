//go:build tools

// Package tools pins the command this module builds (see go.mod).
package tools

import _ "github.com/pulumi/pulumi-kubernetes/provider/v4/cmd/pulumi-resource-kubernetes"
