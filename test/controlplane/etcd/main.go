// Command etcd is etcd's own server main, built from the Go module proxy at a pinned version for
// nodecare's local test control plane.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
