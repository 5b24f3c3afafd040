; The input `opt_lite` optimizes in `cargo xtask bench --corpus llvm`:
; every linked opt_lite must print the same optimized module for it.
; Hand-written for LLVM 14 (typed pointers). The O2 pipeline inlines,
; unrolls, vectorizes, recognizes memset and sinks loads here.

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

%struct.point = type { i32, i32, i64 }

@.fmt = private unnamed_addr constant [14 x i8] c"sum=%d fib=%d\00", align 1
@table = internal global [64 x i32] zeroinitializer, align 16

define internal i32 @square(i32 %x) {
entry:
  %r = mul nsw i32 %x, %x
  ret i32 %r
}

define internal i32 @sum_squares(i32* %a, i32 %n) {
entry:
  %cmp0 = icmp sgt i32 %n, 0
  br i1 %cmp0, label %loop, label %exit

loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %acc = phi i32 [ 0, %entry ], [ %acc.next, %loop ]
  %idx = sext i32 %i to i64
  %p = getelementptr inbounds i32, i32* %a, i64 %idx
  %v = load i32, i32* %p, align 4
  %sq = call i32 @square(i32 %v)
  %acc.next = add nsw i32 %acc, %sq
  %i.next = add nsw i32 %i, 1
  %cmp = icmp slt i32 %i.next, %n
  br i1 %cmp, label %loop, label %exit

exit:
  %res = phi i32 [ 0, %entry ], [ %acc.next, %loop ]
  ret i32 %res
}

define internal void @clear(i32* %a, i32 %n) {
entry:
  br label %head

head:
  %i = phi i32 [ 0, %entry ], [ %i.next, %body ]
  %cmp = icmp slt i32 %i, %n
  br i1 %cmp, label %body, label %done

body:
  %idx = sext i32 %i to i64
  %p = getelementptr inbounds i32, i32* %a, i64 %idx
  store i32 0, i32* %p, align 4
  %i.next = add nsw i32 %i, 1
  br label %head

done:
  ret void
}

define i32 @fib(i32 %n) {
entry:
  %small = icmp slt i32 %n, 2
  br i1 %small, label %base, label %rec

base:
  ret i32 %n

rec:
  %n1 = sub nsw i32 %n, 1
  %f1 = call i32 @fib(i32 %n1)
  %n2 = sub nsw i32 %n, 2
  %f2 = call i32 @fib(i32 %n2)
  %s = add nsw i32 %f1, %f2
  ret i32 %s
}

define i32 @classify(i32 %x) {
entry:
  switch i32 %x, label %other [
    i32 0, label %zero
    i32 1, label %one
    i32 2, label %two
    i32 7, label %seven
  ]

zero:
  br label %join
one:
  br label %join
two:
  br label %join
seven:
  br label %join
other:
  %neg = icmp slt i32 %x, 0
  %o = select i1 %neg, i32 -1, i32 100
  br label %join

join:
  %r = phi i32 [ 10, %zero ], [ 20, %one ], [ 30, %two ], [ 70, %seven ], [ %o, %other ]
  ret i32 %r
}

define i64 @point_norm(%struct.point* %p) {
entry:
  %local = alloca %struct.point, align 8
  %src = bitcast %struct.point* %p to i8*
  %dst = bitcast %struct.point* %local to i8*
  call void @llvm.memcpy.p0i8.p0i8.i64(i8* align 8 %dst, i8* align 8 %src, i64 16, i1 false)
  %xp = getelementptr inbounds %struct.point, %struct.point* %local, i32 0, i32 0
  %yp = getelementptr inbounds %struct.point, %struct.point* %local, i32 0, i32 1
  %wp = getelementptr inbounds %struct.point, %struct.point* %local, i32 0, i32 2
  %x = load i32, i32* %xp, align 8
  %y = load i32, i32* %yp, align 4
  %w = load i64, i64* %wp, align 8
  %xx = call i32 @square(i32 %x)
  %yy = call i32 @square(i32 %y)
  %s = add nsw i32 %xx, %yy
  %s64 = sext i32 %s to i64
  %r = mul nsw i64 %s64, %w
  ret i64 %r
}

define i32 @main() {
entry:
  %base = getelementptr inbounds [64 x i32], [64 x i32]* @table, i64 0, i64 0
  call void @clear(i32* %base, i32 64)
  br label %fill

fill:
  %i = phi i32 [ 0, %entry ], [ %i.next, %fill ]
  %idx = sext i32 %i to i64
  %p = getelementptr inbounds i32, i32* %base, i64 %idx
  %c = call i32 @classify(i32 %i)
  store i32 %c, i32* %p, align 4
  %i.next = add nsw i32 %i, 1
  %more = icmp slt i32 %i.next, 64
  br i1 %more, label %fill, label %report

report:
  %sum = call i32 @sum_squares(i32* %base, i32 64)
  %f = call i32 @fib(i32 20)
  %fmt = getelementptr inbounds [14 x i8], [14 x i8]* @.fmt, i64 0, i64 0
  %unused = call i32 (i8*, ...) @printf(i8* %fmt, i32 %sum, i32 %f)
  ret i32 0
}

declare i32 @printf(i8*, ...)
declare void @llvm.memcpy.p0i8.p0i8.i64(i8* noalias nocapture writeonly, i8* noalias nocapture readonly, i64, i1 immarg)
