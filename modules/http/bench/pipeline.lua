-- modules/http/bench/pipeline.lua — wrk script: 16 pipelined GET /hello per write.
-- wrk -t1 -c32 -d10s -s modules/http/bench/pipeline.lua http://127.0.0.1:18080
init = function(args)
   local requests = {}
   for i = 1, 16 do
      requests[i] = wrk.format("GET", "/hello")
   end
   pipelined = table.concat(requests)
end

request = function()
   return pipelined
end
