module github.com/zeoruntime/runtimeipc/bench

go 1.26

replace github.com/zeoruntime/runtimeipc => ../
