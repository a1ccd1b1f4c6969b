// Command etcd is etcd's own server entry point, built from the published
// go.etcd.io/etcd/server/v3 module (the repository's top-level module, which
// holds the upstream main package, is not published for the 3.7 line).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
