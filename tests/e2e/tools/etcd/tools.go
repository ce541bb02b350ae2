//go:build tools

// Package tools pins the command this module builds (see go.mod): etcd's server main package.
package tools

import _ "go.etcd.io/etcd/server/v3"
