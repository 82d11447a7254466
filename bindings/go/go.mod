module github.com/nerve-robotics/nerve/bindings/go

go 1.22
